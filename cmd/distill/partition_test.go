package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadPartitionFlag: a --partition that is not I/K with 0 <= I < K is
// a usage error (exit 2) naming the setting.
func TestBadPartitionFlag(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{"0/0", "16/16", "-1/4", "a/b", "3"} {
		var stdout, stderr bytes.Buffer
		args := []string{"run", "--input", filepath.Join(dir, "in.jsonl"), "--out", filepath.Join(dir, "run"),
			"--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--partition", bad}
		if code := run(args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "partition: ") {
			t.Errorf("--partition %s: exit %d, want %d naming partition:\n%s", bad, code, exitUsage, stderr.String())
		}
	}
}

// TestStatusOfSeveralDirectories: distill status with several run
// directories prints one table; with none it is a usage error.
func TestStatusOfSeveralDirectories(t *testing.T) {
	input, url := startRun(t, 12)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	var stdout, stderr bytes.Buffer
	for i, d := range []string{a, b} {
		args := []string{"run", "--input", input, "--out", d, "--base-url", url, "--model", "simulated", "--n", "2", "--quiet", "--partition", fmt.Sprintf("%d/2", i)}
		if code := run(args, &stdout, &stderr); code != exitOK && code != exitProblems {
			t.Fatalf("run: exit %d\n%s", code, stderr.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"status", a, b}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if out := stdout.String(); !strings.HasPrefix(out, "worker") || !strings.Contains(out, "total (2 workers)") || !strings.Contains(out, "partitions: 2 of 2, all") {
		t.Errorf("status of two directories:\n%s", out)
	}
	stdout.Reset()
	if code := run([]string{"status", "--json", a, b}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), `"workers"`) {
		t.Errorf("status --json of two directories: exit %d\n%s", code, stdout.String())
	}
}
