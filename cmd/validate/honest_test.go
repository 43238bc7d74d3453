package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotACorpus: a problems file, an empty file and a file of other JSON
// are not corpora: validate says so, names the file, prints no report and
// exits 2, where it used to audit the problems as records without rubrics.
func TestNotACorpus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	problems := "../../examples/problems.jsonl"
	empty := write("empty.jsonl", "")
	blank := write("blank.jsonl", "\n  \n")
	other := write("other.jsonl", `{"prompt": "hi", "completion": "there"}`+"\n")
	notJSON := write("notes.jsonl", "first line of notes\nsecond line\n")
	emptyParquet := write("empty.parquet", "")
	tests := []struct {
		name, path, says string
	}{
		{"problems file", problems, "problem"},
		{"empty file", empty, "empty"},
		{"blank lines", blank, "empty"},
		{"other JSON", other, "prompt"},
		{"not JSON", notJSON, "is JSON"},
		{"empty parquet", emptyParquet, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range [][]string{{}, {"sample"}} {
				code, stdout, stderr := validate(t, nil, append(cmd, tt.path)...)
				if code != exitUsage || !strings.Contains(stderr, "not a corpus") || !strings.Contains(stderr, tt.says) ||
					!strings.Contains(stderr, filepath.Base(tt.path)) {
					t.Errorf("validate %v: exit %d, want %d; stderr %q should say it is not a corpus, name the file and say %q",
						cmd, code, exitUsage, stderr, tt.says)
				}
				if stdout != "" {
					t.Errorf("validate %v printed a report of something that is not a corpus:\n%s", cmd, stdout)
				}
			}
		})
	}
}

// TestAgreementNothingCompared: a sheet drawn from another corpus (none of
// its items is in this one) or left blank compares nothing: agreement says
// why and exits 1 instead of reporting "0 items compared" with exit 0.
func TestAgreementNothingCompared(t *testing.T) {
	dir := writeRun(t, 20, nil)
	sheet := filepath.Join(t.TempDir(), "items.csv")
	if code, _, stderr := validate(t, nil, "sample", dir, "--n", "10", "--out", sheet); code != exitOK {
		t.Fatalf("sample: exit %d: %s", code, stderr)
	}
	rows := readCSV(t, sheet)
	blank := filepath.Join(t.TempDir(), "blank.csv")
	writeCSV(t, blank, rows)
	for _, row := range rows[1:] {
		row[1] = "other-" + row[1] // another corpus's record ids
		row[7] = "valid"
	}
	foreign := filepath.Join(t.TempDir(), "foreign.csv")
	writeCSV(t, foreign, rows)
	for _, tt := range []struct{ sheet, says string }{
		{foreign, "another corpus"},
		{blank, "blank"},
	} {
		code, _, stderr := validate(t, nil, "agreement", dir, "--human", tt.sheet)
		if code != exitFailed || !strings.Contains(stderr, "no item") || !strings.Contains(stderr, tt.says) {
			t.Errorf("%s: exit %d, want %d; stderr %q should say no item was compared and %q", filepath.Base(tt.sheet), code, exitFailed, stderr, tt.says)
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func writeCSV(t *testing.T, path string, rows [][]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	csv.NewWriter(f).WriteAll(rows)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
