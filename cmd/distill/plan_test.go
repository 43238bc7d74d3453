package main

import (
	"github.com/rubricforge/rubricforge/corpus"

	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestPlanCommand: distill plan prints the projection table, writes
// plan.json, and distill status shows the plan, then the real run's
// figures against it.
func TestPlanCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	writeProblems(t, input, 20)
	url := startBuiltSim(t, input)
	out := filepath.Join(dir, "run")
	args := []string{"--input", input, "--base-url", url, "--model", "simulated", "--n", "4", "--out", out, "--quiet", "--free-models", "simulated", "--max-cost-usd", "5"}

	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"plan", "--sample", "5"}, args...), &stdout, &stderr); code != exitOK {
		t.Fatalf("plan exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"5 sampled problems of 20", "rollout", "total", "records expected", "wall time of distill run for the 15 problems left", "binding:", "--max-cost-usd 5 covers"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout.String())
		}
	}
	if p, err := corpus.ReadPlan(out); err != nil || p == nil || p.Measured != 5 {
		t.Fatalf("plan.json: %v %+v", err, p)
	}
	stdout.Reset()
	if code := run([]string{"status", out}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "pilot of distill plan") || !strings.Contains(stdout.String(), "plan of ") {
		t.Errorf("status after the plan (exit %d):\n%s", code, stdout.String())
	}
	runBuilt(t, append([]string{"run"}, args...))
	stdout.Reset()
	run([]string{"status", out}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "against the plan, for the 100.0% of the input handled") {
		t.Errorf("status after the run does not compare with the plan:\n%s", stdout.String())
	}
}

// TestPlanCommandUsage: -h explains --sample with an example; bad input is
// exit 2 naming the line.
func TestPlanCommandUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"plan", "-h"}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "-sample") || !strings.Contains(stderr.String(), "distill plan --config job.yaml --sample 100") {
		t.Errorf("plan -h: exit %d\n%s", code, stderr.String())
	}
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	os.WriteFile(input, []byte("{\"problem\": \"1+1\", \"answer\": \"2\"}\n{broken\n"), 0o644)
	stderr.Reset()
	code := run([]string{"plan", "--input", input, "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--out", filepath.Join(dir, "run")}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "p.jsonl:2") || !strings.Contains(stderr.String(), "--allow-bad-rows") {
		t.Errorf("plan on a bad row: exit %d\n%s", code, stderr.String())
	}
}

// TestPlanCommandGrounded: distill plan of a grounded job over the example
// documents samples passages and projects the grounded stages; distill run
// afterwards finishes the passages and status compares them with the plan.
func TestPlanCommandGrounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := startBuiltSim(t, "")
	out := filepath.Join(dir, "run")
	args := []string{"--style", "grounded", "--input", filepath.Join("..", "..", "examples", "documents"), "--passage-chars", "1200",
		"--base-url", url, "--model", "simulated", "--out", out, "--quiet", "--free-models", "simulated"}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"plan", "--sample", "5"}, args...), &stdout, &stderr); code != exitOK {
		t.Fatalf("plan exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	p, err := corpus.ReadPlan(out)
	if err != nil || p == nil || p.Measured != 5 || p.Style != "grounded" || p.Input.Unique <= 5 {
		t.Fatalf("plan.json: %v %+v", err, p)
	}
	for _, want := range []string{"5 sampled passages of", "analyze", "synthesize", "judge", "left out by the quality checks",
		fmt.Sprintf("wall time of distill run for the %d passages left", p.Input.Rest)} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout.String())
		}
	}
	runBuilt(t, append([]string{"run"}, args...))
	stdout.Reset()
	run([]string{"status", out}, &stdout, &stderr)
	if !strings.Contains(stdout.String(), "against the plan, for the 100.0% of the input handled") || !strings.Contains(stdout.String(), "passages left") {
		t.Errorf("status after the run does not compare with the plan:\n%s", stdout.String())
	}
}

// startBuiltSim starts the built simllm as sim.Config{} with the answers
// of the problems file (none when it is empty) and returns its URL; it
// stops when the test ends. For the plan tests the endpoint is setup: the
// plan's pilot, their subject, runs in-process and sends to it.
func startBuiltSim(t *testing.T, problems string) string {
	t.Helper()
	args, err := simllmArgs(sim.Config{}, problems)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := startSimllm(buildBins(t).simllm, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return url
}

// runBuilt runs the built distill with args, for a run that is setup (the
// real run a plan is compared with): exit 0 or 3 (some problems failed).
func runBuilt(t *testing.T, args []string) {
	t.Helper()
	if msg, err := exec.Command(buildDistill(t), args...).CombinedOutput(); err != nil && !exitedWith(err, exitProblems) {
		t.Fatalf("%s: %v\n%s", args[0], err, msg)
	}
}
