package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	t.Parallel()
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

var createdAt = regexp.MustCompile(`"created_at":"[^"]*"`)

// TestMergeCommand: the workers of a partitioned job, merged with distill
// merge, export to the same rows as one machine's run of the job.
func TestMergeCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	writeProblems(t, input, 12)
	url := startBuiltSim(t, input)
	var stdout, stderr bytes.Buffer
	// The runs to merge are setup, by the built distill against the built
	// simllm: the merge, the subject, runs in-process.
	runJob := func(out string, extra ...string) {
		runBuilt(t, append([]string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "4", "--quiet"}, extra...))
	}
	whole := filepath.Join(dir, "whole")
	runJob(whole)
	var parts []string
	for i := range 3 {
		parts = append(parts, filepath.Join(dir, fmt.Sprintf("part-%d", i)))
		runJob(parts[i], "--partition", fmt.Sprintf("%d/3", i))
	}
	merged := filepath.Join(dir, "all")
	if code := run([]string{"merge", parts[0], parts[1], "--out", merged, "--shard-rows", "5"}, &stdout, &stderr); code != exitFailed || !strings.Contains(stderr.String(), "missing partitions: 2/3") {
		t.Errorf("merging 2 of 3 parts: exit %d, want %d naming the missing partition:\n%s", code, exitFailed, stderr.String())
	}
	stdout.Reset()
	if code := run(append(append([]string{"merge"}, parts...), "--out", merged, "--shard-rows", "5"), &stdout, &stderr); code != exitOK {
		t.Fatalf("merge: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "run directory: "+merged+" (finished)") {
		t.Errorf("merge summary:\n%s", stdout.String())
	}
	export := func(from string) map[string]string {
		out := filepath.Join(dir, "export-"+filepath.Base(from))
		if code := run([]string{"export", from, "--format", "jsonl", "--out", out}, &stdout, &stderr); code != exitOK {
			t.Fatalf("export %s: exit %d\n%s", from, code, stderr.String())
		}
		rows := map[string]string{}
		files, _ := filepath.Glob(filepath.Join(out, "*", "*.jsonl"))
		more, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
		for _, f := range append(files, more...) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var r struct {
					ID string `json:"id"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil || r.ID == "" {
					t.Fatalf("%s: %q: %v", f, line, err)
				}
				rows[r.ID] = createdAt.ReplaceAllString(line, "") // the records were made at other times
			}
		}
		return rows
	}
	got, want := export(merged), export(whole)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("the merged corpus exports %d rows, a whole run %d", len(got), len(want))
	}
	for id, line := range want {
		if got[id] != line {
			t.Errorf("exported row %s differs from a whole run's", id)
		}
	}
	for _, args := range [][]string{{"merge", "--out", merged}, {"merge", parts[0]}} {
		if code := run(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}
