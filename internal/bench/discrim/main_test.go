package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"-records", "10", "-items", "3", "-run", "validate {corpus}"}, true},
		{[]string{"-items", "2"}, false},
		{[]string{"-records", "0"}, false},
		{[]string{"-rollouts", "0"}, false},
		{[]string{"extra"}, false},
	} {
		var errb bytes.Buffer
		o, err := parseFlags(tc.args, &errb)
		if (err == nil) != tc.ok {
			t.Errorf("%v: err %v (%s); want ok %v", tc.args, err, errb.String(), tc.ok)
		}
		if err == nil && len(tc.args) == 0 && (len(o.runs) != 1 || o.runs[0] != "validate {corpus} --json") {
			t.Errorf("default runs %q", o.runs)
		}
	}
}

// TestEndToEnd writes a small corpus, runs a stand-in for validate that
// prints a report, and reads the figures back from its output.
func TestEndToEnd(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho '{\"corpus\":{\"records\":20},\"discrimination\":{\"measured\":15,\"mean_auroc\":0.9}}'\n"
	if err := os.WriteFile(filepath.Join(bin, "validate"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-bin", bin, "-records", "20", "-dir", work, "-run", "validate {corpus} --json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"20 records x 8 rollouts x 10 items", "exit 0, wall", "20 records read, 15 measured by the discrimination section, mean rubric AUROC 0.900"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(work, "synth-20-8-10-1", "manifest.json")); err != nil {
		t.Errorf("the corpus is not in the work directory: %v", err)
	}
	out.Reset()
	if code := run(context.Background(), []string{"-bin", bin, "-records", "20", "-dir", work}, &out, &errb); code != 0 || !strings.Contains(out.String(), "(reused)") {
		t.Errorf("a second run: exit %d, output %s", code, out.String())
	}
}
