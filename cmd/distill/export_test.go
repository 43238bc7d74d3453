package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/schema"
)

// TestExportCommand builds a corpus with distill run against the simulated
// endpoint, exports it, and checks every row the policy would see.
func TestExportCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 10)
	_, url, stop, err := sim.Start(sim.Config{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	runDir := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--input", input, "--base-url", url, "--model", "simulated", "--n", "4", "--out", runDir, "--quiet"}, &stdout, &stderr)
	if code != exitOK && code != exitProblems {
		t.Fatalf("run: exit %d\n%s", code, stderr.String())
	}

	system := filepath.Join(dir, "system.txt")
	os.WriteFile(system, []byte("Think step by step.\n"), 0o644)
	out := filepath.Join(dir, "export")
	stdout.Reset()
	// The run directory may come after the flags or before them.
	code = run([]string{"export", runDir, "--format", "verl", "--out", out, "--system-prompt", system, "--valid-only", "--rows-per-file", "3"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr.String())
	}
	m, err := corpus.ReadExportManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "export: "+out+" (verl)") || m.RecordsOut == 0 || m.Source != runDir {
		t.Errorf("summary %q, manifest %+v", stdout.String(), m)
	}
	problems := map[string]bool{}
	for p := range answers {
		problems[p] = true
	}
	rows := 0
	for _, f := range m.Files {
		err := corpus.Scan(filepath.Join(out, f.File), func(r *corpus.VerlRow) error {
			rows++
			if len(r.Prompt) != 2 || r.Prompt[0] != (corpus.ChatMessage{Role: "system", Content: "Think step by step."}) ||
				r.Prompt[1].Role != "user" || !problems[r.Prompt[1].Content] {
				t.Errorf("%s: prompt %+v is not the system message and a problem", f.File, r.Prompt)
			}
			label, err := schema.ParseLabel([]byte(r.Label))
			if err != nil {
				t.Fatalf("%s: %v", f.File, err)
			}
			for _, it := range label.Rubric {
				if strings.Contains(r.Prompt[1].Content, it.Text) {
					t.Errorf("%s: the prompt holds rubric item %d", f.File, it.ID)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if int64(rows) != m.RecordsOut {
		t.Errorf("%d rows in the files, export.json says %d", rows, m.RecordsOut)
	}

	// The same command again changes nothing; another format into the same
	// directory replaces the export.
	before, _ := os.ReadFile(filepath.Join(out, corpus.ExportManifestName))
	if code := run([]string{"export", "--format", "verl", "--out", out, "--system-prompt", system, "--valid-only", "--rows-per-file", "3", runDir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("second export: exit %d\n%s", code, stderr.String())
	}
	if after, _ := os.ReadFile(filepath.Join(out, corpus.ExportManifestName)); !bytes.Equal(before, after) {
		t.Errorf("export.json changed on a second run:\n%s\n%s", before, after)
	}
}

func TestExportUsage(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte(" \n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export"}, exitUsage, "one run directory"},
		{[]string{"export", "a", "b", "--format", "verl", "--out", dir}, exitUsage, "got 2"},
		{[]string{"export", "r", "--format", "parquet", "--out", dir}, exitUsage, "--format"},
		{[]string{"export", "r", "--format", "verl"}, exitUsage, "--out"},
		{[]string{"export", "r", "--format", "verl", "--out", dir, "--split", "dev"}, exitUsage, "--split"},
		{[]string{"export", "r", "--format", "rar", "--out", dir, "--system-prompt", empty}, exitUsage, "empty"},
		{[]string{"export", "r", "--format", "rar", "--out", dir, "--system-prompt", filepath.Join(dir, "nope")}, exitUsage, "nope"},
		{[]string{"export", "r", "--format", "verl", "--out", dir, "--rows-per-file", "0"}, exitUsage, "--rows-per-file"},
		{[]string{"export", "r", "--no-such"}, exitUsage, "no-such"},
		{[]string{"export", filepath.Join(dir, "missing"), "--format", "verl", "--out", filepath.Join(dir, "x")}, exitUsage, "missing"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr does not mention %q:\n%s", tc.args, code, tc.code, tc.want, stderr.String())
		}
	}
}

func TestExportHelpExplainsEveryFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"export", "-h"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("export -h: exit %d", code)
	}
	help := stderr.String()
	f := newExportFlags(&bytes.Buffer{})
	f.fs.VisitAll(func(fl *flag.Flag) {
		if !strings.Contains(help, "-"+fl.Name) {
			t.Errorf("export -h does not explain -%s", fl.Name)
		}
		if !strings.Contains(fl.Usage, "e.g.") && fl.DefValue != "false" {
			t.Errorf("-%s has no example", fl.Name)
		}
	})
	for _, want := range []string{"Examples:", "Exit codes", "verl", "rar", "srar-lines", "jsonl"} {
		if !strings.Contains(help, want) {
			t.Errorf("export -h does not mention %q", want)
		}
	}
}
