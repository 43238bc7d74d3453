package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/pipeline"
)

func writeProblems(t *testing.T, path string, n int) map[string]string {
	t.Helper()
	answers := map[string]string{}
	var b bytes.Buffer
	for i := range n {
		p := fmt.Sprintf("What is %d plus %d?", i, 2*i+1)
		answers[p] = fmt.Sprint(3*i + 1)
		line, _ := json.Marshal(map[string]string{"problem": p, "answer": answers[p]})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return answers
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 12)
	_, url, stop, err := llmtest.Start(llmtest.Config{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	out := filepath.Join(dir, "run")
	job := filepath.Join(dir, "job.yaml")
	// The job file names a wrong endpoint and n; the flags override both.
	os.WriteFile(job, []byte("input: {paths: ["+input+"]}\nrollout: {base_url: http://127.0.0.1:1/v1, model: simulated, n: 2}\n"), 0o644)

	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--config", job, "--base-url", url, "--n", "4", "--out", out, "--quiet"}, &stdout, &stderr)
	if code != exitOK && code != exitProblems {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "run directory: "+out) || !strings.Contains(stdout.String(), "problems: 12 unique") {
		t.Errorf("summary missing:\n%s", stdout.String())
	}
	written, err := pipeline.LoadJobFile(filepath.Join(out, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if written.Rollout.N != 4 || written.Rollout.BaseURL != url || written.Judge.BaseURL != url {
		t.Errorf("job.yaml does not hold the flag values: n=%d base_url=%s judge base_url=%s", written.Rollout.N, written.Rollout.BaseURL, written.Judge.BaseURL)
	}

	stdout.Reset()
	if code := run([]string{"status", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "finished") || !strings.Contains(stdout.String(), "corpus:") {
		t.Errorf("status output:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"status", "--json", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("status --json exit %d", code)
	}
	var st map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
		t.Errorf("status --json is not JSON: %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "Usage"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{[]string{"run", "--no-such-flag"}, exitUsage, "no-such-flag"},
		{[]string{"run"}, exitUsage, "input.paths"},
		{[]string{"run", "--input", "x.jsonl", "--out", dir, "--base-url", "ftp://x", "--model", "m"}, exitUsage, "rollout.base_url"},
		{[]string{"run", "--config", filepath.Join(dir, "missing.yaml")}, exitUsage, "missing.yaml"},
		{[]string{"run", "extra"}, exitUsage, "unexpected argument"},
		{[]string{"status"}, exitUsage, "Usage"},
		{[]string{"status", filepath.Join(dir, "nothing")}, exitFailed, "nothing"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %s)", tc.args, code, tc.code, stderr.String())
		}
		if !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: output does not mention %q:\n%s%s", tc.args, tc.want, stdout.String(), stderr.String())
		}
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "-h"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("run -h exit %d", code)
	}
	help := stderr.String()
	for _, want := range []string{"Examples:", "--config", "-base-url", "-api-key-env", "-judge-model", "-retry-failed", "-force", "-max-cost-usd", "Exit codes"} {
		if !strings.Contains(help, want) {
			t.Errorf("run -h does not mention %q", want)
		}
	}
}

func TestUnknownJobKeyIsAnError(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	os.WriteFile(job, []byte("rollout: {n: 4, temprature: 0.5}\n"), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--config", job}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr.String(), "temprature") {
		t.Errorf("error does not name the unknown key: %s", stderr.String())
	}
}
