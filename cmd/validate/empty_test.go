package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// TestEmptyCorpusFails: validate on a corpus with no record exits 1 and
// says so in its last line, with the run's account of why when it has one
// (issue 43, item 3: it printed empty tables and exited 0).
func TestEmptyCorpusFails(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	r, err := corpus.Open(run, corpus.Options{ToolVersion: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r.SetFingerprint("fp")
	if err := r.Commit(); err != nil { // a manifest with no shard, as a run that kept nothing writes
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(run, "report.json"), []byte(`{"status": "finished", "style": "srar",
 "problems": {"input_rows": 4, "unique": 4, "left_out": 4}, "left_out_by_stage": {"select": 4}}`), 0o644)
	for _, args := range [][]string{{run}, {run, "--json"}} {
		code, _, stderr := validate(t, nil, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if last := lines[len(lines)-1]; code != exitFailed || !strings.Contains(last, "holds no records") || !strings.Contains(last, "4 of 4 problems left out (select=4)") {
			t.Errorf("validate %v: exit %d, last line %q; want 1 and why", args, code, last)
		}
	}
}
