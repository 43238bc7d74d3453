package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/workers"
)

// TestValidateReadsAMergedCorpus: the merge of a partitioned job's workers
// audits exactly like the corpus one machine makes of the same job.
func TestValidateReadsAMergedCorpus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	var lines []string
	answers := map[string]string{}
	for i := range 30 {
		p := fmt.Sprintf("What is %d times %d?", i, i+3)
		answers[p] = fmt.Sprint(i * (i + 3))
		lines = append(lines, fmt.Sprintf(`{"problem":%q,"answer":%q}`, p, answers[p]))
	}
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, url, stop, err := sim.Start(sim.Config{Answers: answers})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// The runs are the setup, made by the built (not race-instrumented)
	// distill run against the in-process simulated endpoint; validate is
	// what is tested.
	distill := testbin.Command(t, "cmd/distill")
	run := func(out, partition string) {
		args := []string{"run", "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--n", "4", "--quiet"}
		if partition != "" {
			args = append(args, "--partition", partition)
		}
		if out, err := exec.Command(distill, args...).CombinedOutput(); err != nil {
			t.Fatalf("distill %v: %v\n%s", args, err, out)
		}
	}
	whole := filepath.Join(dir, "whole")
	run(whole, "")
	var parts []string
	for i := range 3 {
		parts = append(parts, filepath.Join(dir, fmt.Sprintf("part-%d", i)))
		run(parts[i], fmt.Sprintf("%d/3", i))
	}
	merged := filepath.Join(dir, "all")
	if _, err := workers.Merge(t.Context(), parts, merged, workers.MergeOptions{ShardRows: 4}); err != nil {
		t.Fatal(err)
	}
	audit := func(corpus string) map[string]json.RawMessage {
		code, stdout, stderr := validate(t, nil, corpus, "--json")
		if code != exitOK {
			t.Fatalf("validate %s: exit %d: %s", corpus, code, stderr)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got, want := audit(merged), audit(whole)
	compared := 0
	for k, w := range want {
		if k == "corpus" || k == "paths" || k == "source" || k == "files" || k == "shards" {
			continue // where the corpus is and how it is cut
		}
		compared++
		if k == "provenance" { // the records were made at other times
			got[k], w = withoutTimes(t, got[k]), withoutTimes(t, w)
		}
		if string(got[k]) != string(w) {
			t.Errorf("validate %s of the merged corpus:\n%s\nof a whole run's:\n%s", k, got[k], w)
		}
	}
	if compared < 3 {
		t.Errorf("only %d figures compared: %v", compared, want)
	}
}

// withoutTimes drops the creation times from a provenance summary.
func withoutTimes(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["created_first"]; !ok {
		t.Fatalf("provenance has no created_first: %s", raw)
	}
	delete(m, "created_first")
	delete(m, "created_last")
	b, _ := json.Marshal(m)
	return b
}
