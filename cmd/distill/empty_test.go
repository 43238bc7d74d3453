package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// lastLine is the last non-blank line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestEmptyResultsExitNonZero: a run that finishes with an empty corpus
// (no rollout was correct, so selection left every problem out) exits 3
// with the cause in its last line, and so does distill status on it
// (issue 43, item 3: both exited 0).
func TestEmptyResultsExitNonZero(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	writeProblems(t, input, 4)
	_, url, stop, err := sim.Start(sim.Config{}) // no answers: every rollout is wrong
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--input", input, "--base-url", url, "--model", "simulated", "--n", "2", "--out", out, "--quiet"}, &stdout, &stderr)
	if code != exitProblems || !strings.Contains(lastLine(stderr.String()), "the corpus is empty: all 4 problems were left out by selection") {
		t.Errorf("distill run: exit %d, last line %q; want 3 and the cause", code, lastLine(stderr.String()))
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"status", out}, &stdout, &stderr)
	if code != exitProblems || !strings.Contains(lastLine(stderr.String()), "the corpus is empty") {
		t.Errorf("distill status: exit %d, last line %q; want 3 and the cause", code, lastLine(stderr.String()))
	}
}

// TestPlanWithNoRecordExitsNonZero: a plan whose pilot made no record
// (every sampled problem left out by selection) exits 3 with the cause in
// its last line and gives no advice on concurrency for a run that would
// make nothing (issue 43, item 3: "records expected: 0", then advice, exit 0).
func TestPlanWithNoRecordExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	writeProblems(t, input, 6)
	_, url, stop, err := sim.Start(sim.Config{}) // no answers: every rollout is wrong
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var stdout, stderr bytes.Buffer
	code := run([]string{"plan", "--input", input, "--base-url", url, "--model", "simulated", "--n", "2", "--sample", "4", "--out", filepath.Join(dir, "run"), "--quiet"}, &stdout, &stderr)
	last := lastLine(stderr.String())
	if code != exitProblems || !strings.Contains(last, "the pilot made no record: all 4 sampled problems were left out by selection") {
		t.Errorf("distill plan: exit %d, last line %q; want 3 and the cause", code, last)
	}
	if strings.Contains(stdout.String(), "binding:") || strings.Contains(stdout.String(), "would take it") {
		t.Errorf("the plan of a run that makes nothing advises on its wall time:\n%s", stdout.String())
	}
}
