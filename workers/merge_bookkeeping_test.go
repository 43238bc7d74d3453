package workers

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/llm"
)

// TestMergeCountsLeftOutsByStage: a worker's problems left out by a check
// (selection in the math styles, the quality check in the grounded style)
// are counted as left out in the merge's report, never as failures.
func TestMergeCountsLeftOutsByStage(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 12, sim.Config{})
	dirs := runWorkers(t, f.Job, f.Dir, 2)
	before := map[string]int{}
	for _, fl := range runtest.ReadFailures(t, dirs[0]) {
		before[fl.Stage]++
	}
	extra := []corpus.Failure{
		{ID: "q-left-out-1", Stage: job.StageQuality, Reason: "fewer than 3 criteria", Attempts: 1, Time: time.Now().UTC()},
		{ID: "q-left-out-2", Stage: job.StageQuality, Reason: "copies the passage", Attempts: 1, Time: time.Now().UTC()},
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
		for _, fl := range runtest.ReadFailures(t, d) {
			if fl.ID == extra[0].ID || fl.ID == extra[1].ID {
				continue
			}
			if job.LeftOutStage(fl.Stage) {
				wantLeftOut++
			} else {
				wantFailed++
			}
		}
	}
	rep, err := Merge(t.Context(), dirs, filepath.Join(f.Dir, "merged"), MergeOptions{})
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
	t.Parallel()
	f := runtest.NewFixture(t, 8, sim.Config{})
	parent := filepath.Join(f.Dir, "workers")
	dirs := runWorkers(t, f.Job, parent, 2)
	for _, out := range []string{parent, f.Dir, filepath.Join(dirs[1], "merged")} {
		_, err := Merge(t.Context(), dirs, out, MergeOptions{})
		if err == nil || !strings.Contains(err.Error(), "--out "+out) {
			t.Errorf("--out %s: merged (%v); want a refusal naming it", out, err)
		}
		if _, err := os.Stat(filepath.Join(out, corpus.ManifestName)); !os.IsNotExist(err) {
			t.Errorf("--out %s: a refused merge wrote a manifest there", out)
		}
	}
}

// TestGroundedPartitionsKeepAPassageOnce: the same passage text under two
// ids (a document copied under another name) goes to one worker, so the
// merge holds it once, as one machine does, never in two workers and two
// splits (a train/validation leak).
func TestGroundedPartitionsKeepAPassageOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, docs, 6)
	_, url := runtest.StartSim(t, sim.Config{})
	// Where a passage goes is decided before any stage: the judge and the
	// closed-book answers are left out (they only make each run dearer).
	grounded := func(out string) job.Job {
		j := runtest.GroundedTestJob(docs, out, url)
		j.Judge.Enabled, j.Empirical.Enabled = false, false
		return j
	}
	whole := grounded(filepath.Join(dir, "whole"))
	runJob(t, whole, pipeline.Options{})
	for _, k := range []int{2, 3} {
		job := grounded("")
		dirs := runWorkers(t, job, filepath.Join(dir, fmt.Sprint("k", k)), k)
		out := filepath.Join(dir, fmt.Sprint("merged", k))
		if _, err := Merge(t.Context(), dirs, out, MergeOptions{}); err != nil {
			t.Fatalf("K=%d: %v", k, err)
		}
		recs := runtest.ReadCorpus(t, out)
		byHash := map[string]string{}
		for id, r := range recs {
			if other, dup := byHash[r.Grounded.DocHash]; dup {
				t.Errorf("K=%d: passage %s is in the merged corpus twice: %s (%s) and %s (%s)", k, r.Grounded.DocHash, id, r.Split, other, recs[other].Split)
			}
			byHash[r.Grounded.DocHash] = id
		}
		want := runtest.ReadCorpus(t, whole.Out)
		if g, w := slices.Sorted(maps.Keys(recs)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
			t.Errorf("K=%d: the merge holds %d passages, one machine %d", k, len(g), len(w))
		}
	}
}

// TestMergeKeepsCostAndAnswers: the merged corpus keeps what its workers
// spent and the answers they paid for. The merge's report, and the whole
// job run again in the merged directory, show the workers' tokens and
// cost (not 0), and a variant of the job that reads the merged cache as
// its base (--cache) pays for nothing the workers already have.
func TestMergeKeepsCostAndAnswers(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 18, sim.Config{KeepLog: true})
	dirs := runWorkers(t, f.Job, f.Dir, 3)
	var want llm.StageStats
	for _, d := range dirs {
		rep, _, err := pipeline.ReadReport(d)
		if err != nil {
			t.Fatal(err)
		}
		want.PromptTokens += rep.LLM.Total.PromptTokens
		want.CompletionTokens += rep.LLM.Total.CompletionTokens
		want.CostUSD += rep.LLM.Total.CostUSD
	}
	if want.PromptTokens == 0 || want.CostUSD == 0 {
		t.Fatalf("the workers spent nothing: %+v", want)
	}
	sameSpend := func(what string, got llm.StageStats) {
		t.Helper()
		if got.PromptTokens != want.PromptTokens || got.CompletionTokens != want.CompletionTokens || math.Abs(got.CostUSD-want.CostUSD) > 1e-9 {
			t.Errorf("%s: %d+%d tokens, $%.6f; the workers spent %d+%d, $%.6f", what, got.PromptTokens, got.CompletionTokens, got.CostUSD, want.PromptTokens, want.CompletionTokens, want.CostUSD)
		}
	}
	out := filepath.Join(f.Dir, "merged")
	rep, err := Merge(t.Context(), dirs, out, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameSpend("the merge's report", rep.LLM.Total)

	whole := f.Job
	whole.Out = out
	from := len(f.Srv.Log())
	again := runJob(t, whole, pipeline.Options{})
	if sent := len(f.Srv.Log()) - from; sent != 0 {
		t.Errorf("the whole job in the merged directory sent %d requests", sent)
	}
	sameSpend("the whole job run again in the merged directory", again.LLM.Total)

	// A variant (another output, the same requests) reads the merged cache.
	variant := f.Job
	variant.Out = filepath.Join(f.Dir, "variant")
	variant.Cache = filepath.Join(out, "cache.db")
	from = len(f.Srv.Log())
	vrep := runJob(t, variant, pipeline.Options{})
	if sent := len(f.Srv.Log()) - from; sent != 0 || vrep.Problems.Done != again.Problems.Done {
		t.Errorf("the variant over the merged cache sent %d requests (want 0: the workers have every answer) and made %d records (want %d)", sent, vrep.Problems.Done, again.Problems.Done)
	}

	// An answer a later run put in the merged cache survives a merge run
	// again.
	added := cache.Identity{Key: 0x5eed, Digest: [32]byte{0xd1}}
	putInCache(t, filepath.Join(out, "cache.db"), added)
	if _, err := Merge(t.Context(), dirs, out, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(filepath.Join(out, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok, err := c.Get(added); err != nil || !ok {
		t.Errorf("a merge run again lost an answer the merged directory's cache held: %v, %v", ok, err)
	}
}

func putInCache(t *testing.T, path string, id cache.Identity) {
	t.Helper()
	c, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(id, []byte(`{"choices":[]}`), cache.Usage{Stage: "rollout", Model: "simulated"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
