package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/llmtest"
)

// TestMergeCountsLeftOutsByStage: a worker's problems left out by a check
// (selection in the math styles, the quality check in the grounded style)
// are counted as left out in the merge's report, never as failures.
func TestMergeCountsLeftOutsByStage(t *testing.T) {
	f := newFixture(t, 12, llmtest.Config{})
	dirs := runWorkers(t, f.job, f.dir, 2)
	before := map[string]int{}
	for _, fl := range readFailures(t, dirs[0]) {
		before[fl.Stage]++
	}
	extra := []corpus.Failure{
		{ID: "q-left-out-1", Stage: StageQuality, Reason: "fewer than 3 criteria", Attempts: 1, Time: time.Now().UTC()},
		{ID: "q-left-out-2", Stage: StageQuality, Reason: "copies the passage", Attempts: 1, Time: time.Now().UTC()},
	}
	fh, err := os.OpenFile(filepath.Join(dirs[0], "failures.jsonl"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range extra {
		b, _ := json.Marshal(fl)
		fh.Write(append(b, '\n'))
	}
	fh.Close()
	var wantLeftOut, wantFailed int64 = 2, 0
	for _, d := range dirs {
		for _, fl := range readFailures(t, d) {
			if fl.ID == extra[0].ID || fl.ID == extra[1].ID {
				continue
			}
			if leftOutStage(fl.Stage) {
				wantLeftOut++
			} else {
				wantFailed++
			}
		}
	}
	rep, err := Merge(t.Context(), dirs, filepath.Join(f.dir, "merged"), MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Problems; p.LeftOutThisSession != wantLeftOut || p.FailedThisSession != wantFailed {
		t.Errorf("merge counted %d left out and %d failed, want %d and %d (quality left-outs are not failures)", p.LeftOutThisSession, p.FailedThisSession, wantLeftOut, wantFailed)
	}
}

// TestMergeRefusesAnOutAroundTheWorkers: --out into the workers' parent
// directory (or any directory holding a worker) would turn it into a run
// directory around them; it is refused before anything is written.
func TestMergeRefusesAnOutAroundTheWorkers(t *testing.T) {
	f := newFixture(t, 8, llmtest.Config{})
	parent := filepath.Join(f.dir, "workers")
	dirs := runWorkers(t, f.job, parent, 2)
	for _, out := range []string{parent, f.dir, filepath.Join(dirs[1], "merged")} {
		_, err := Merge(t.Context(), dirs, out, MergeOptions{})
		if err == nil || !strings.Contains(err.Error(), "--out "+out) {
			t.Errorf("--out %s: merged (%v); want a refusal naming it", out, err)
		}
		if _, err := os.Stat(filepath.Join(out, corpus.ManifestName)); !os.IsNotExist(err) {
			t.Errorf("--out %s: a refused merge wrote a manifest there", out)
		}
	}
}
