package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestNotACorpus: a problems file, an empty file and a file of other JSON
// are not corpora: validate says so, names the file, prints no report and
// exits 2, where it used to audit the problems as records without rubrics.
func TestNotACorpus(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	dir := sharedRun(t, 20)
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

// TestRejudgeCtrlC runs validate rejudge as its own process (this test
// binary, re-run) against a slow simulated judge, sends SIGINT once some
// requests were answered, and checks the exit code 4, the partial figures
// on stdout and the message on stderr.
func TestRejudgeCtrlC(t *testing.T) {
	if args := os.Getenv("VALIDATE_AS_MAIN"); args != "" {
		os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr, os.Getenv))
	}
	srv, url, stop, err := sim.Start(sim.Config{Seed: 2, Latency: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeRun(t, 30, nil)
	args := []string{"rejudge", dir, "--base-url", url, "--model", "simulated", "--sample", "100", "--concurrency", "2",
		"--cache", filepath.Join(t.TempDir(), "cache.db"), "--json"}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRejudgeCtrlC$")
	cmd.Env = append(os.Environ(), "VALIDATE_AS_MAIN="+strings.Join(args, "\n"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for srv.Count() < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	var rep struct {
		Sample struct {
			Drawn, Judged int
			Stopped       string
		}
		Agreement struct{ Items int }
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil {
		t.Fatalf("exit %d (%v); stdout is not the JSON report: %v\n%s\nstderr: %s", code, err, jerr, stdout.String(), stderr.String())
	}
	if code != exitStopped || rep.Sample.Judged == 0 || rep.Agreement.Items != rep.Sample.Judged || rep.Sample.Judged == rep.Sample.Drawn ||
		!strings.Contains(rep.Sample.Stopped, "interrupted") || !strings.Contains(stderr.String(), "interrupted after") {
		t.Errorf("exit %d, want %d; sample %+v, %d items compared\nstderr: %s", code, exitStopped, rep.Sample, rep.Agreement.Items, stderr.String())
	}
}
