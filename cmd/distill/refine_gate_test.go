package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefineMinGainGate: --min-gain gates on the lower bound of the 95%
// interval of the held-out change of the rubric's own signal: a bound
// below it exits 1, says so with both numbers, and writes no DST; a bound
// at or above it exits 0. --folds and --judge-error are refine's settings
// (DST/refine.json says them).
func TestRefineMinGainGate(t *testing.T) {
	t.Parallel()
	src := smallCorpus(t, true)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	failing := filepath.Join(dir, "failing")
	code := run([]string{"refine", src, "--out", failing, "--min-gain", "0.9", "--folds", "3", "--judge-error", "0.08"}, &stdout, &stderr)
	if code != exitFailed {
		t.Fatalf("--min-gain 0.9: exit %d, want %d\n%s%s", code, exitFailed, stdout.String(), stderr.String())
	}
	for _, want := range []string{"--min-gain 0.9", "lower bound", "not written"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(failing); err == nil {
		t.Error("a refinement that fails --min-gain was written")
	}
	stdout.Reset()
	stderr.Reset()
	passing := filepath.Join(dir, "passing")
	if code := run([]string{"refine", src, "--out", passing, "--min-gain", "-1", "--folds", "3", "--judge-error", "0.08", "--json"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("--min-gain -1: exit %d\n%s", code, stderr.String())
	}
	sum := readSummary(t, stdout.Bytes())
	if sum.Folds != 3 || sum.JudgeError.Rate != 0.08 || sum.JudgeError.From != "flag" || sum.Settings["folds"] != "3" {
		t.Errorf("folds %d, judge error %+v, settings %v; want 3 and 0.08 from the flag", sum.Folds, sum.JudgeError, sum.Settings)
	}
	stdout.Reset()
	if code := run([]string{"refine", src, "--out", passing, "--min-gain", "0.9", "--folds", "3", "--judge-error", "0.08"}, &stdout, &stderr); code != exitFailed {
		t.Errorf("--min-gain 0.9 on a DST that holds this refinement: exit %d, want %d (the gate reads its refine.json)", code, exitFailed)
	}
}
