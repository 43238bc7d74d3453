package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/llm"
)

// TestBatchWaveSettlesAProblemOnce: a problem whose rollouts are split over
// two batch files is let go on by each batch that answers them; once it
// is settled (left out, failed or written) a later batch's answer must not
// run it again, or the run counts it twice and ends "stopped" with -1
// problems pending. With 101 rows a file, the problem at each file's end
// has its four rollouts in two batches. Whether the second batch is
// ingested in time for the wave the first started depends on timing, so
// this test catches the fault about every other run;
// TestTakeReadySkipsSettledProblems pins it.
func TestBatchWaveSettlesAProblemOnce(t *testing.T) {
	dir := t.TempDir()
	rows := makeProblems(400)
	input := filepath.Join(dir, "in.jsonl")
	writeJSONL(t, input, rows)
	_, url := batchSim(t, rows, llmtest.Config{Seed: 5})
	job := batchJob(input, filepath.Join(dir, "out"), url, StageRollout, StageDistill, StageJudge)
	job.Empirical.Enabled = false
	job.Batch.MaxRequests = 101
	rep := runJob(t, job, Options{})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, job.Out, rows, rep)
	b, err := os.ReadFile(filepath.Join(job.Out, "failures.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		id, _, _ := strings.Cut(strings.TrimPrefix(line, `{"id":"`), `"`)
		if seen[id] {
			t.Errorf("problem %s settled twice in one session:\n%s", id, b)
		}
		seen[id] = true
	}
	if rep.Problems.LeftOut == 0 {
		t.Fatal("no problem left out: the test does not exercise a settled problem")
	}
}

// TestTakeReadySkipsSettledProblems: of the problems a batch lets go on,
// the next wave runs only those not yet failed or left out this session.
// A problem whose rollouts sat in two batches is let go on by each; if the
// wave the first one started settled it, the second must not run it again.
func TestTakeReadySkipsSettledProblems(t *testing.T) {
	_, url := startSim(t, llmtest.Config{})
	dir := t.TempDir()
	cache, err := llm.OpenCache(filepath.Join(dir, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	b, err := llm.NewBatcher(llm.BatchOptions{Dir: filepath.Join(dir, "batches"), PollInterval: 10 * time.Millisecond},
		cache, llm.NewMeter(nil, llm.Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	api, err := llm.NewBatchAPI(llm.Endpoint{BaseURL: url}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := b.Deferrer(api)
	ctx := context.Background()
	b.Start(ctx)
	defer b.Close()
	for _, unit := range []string{"settled", "waiting"} {
		req := llm.Request{Stage: StageRollout, Model: "simulated", Messages: []llm.Message{{Role: "user", Content: "Compute 2 + 3 for " + unit + "."}}}
		body, _ := json.Marshal(map[string]any{"model": req.Model, "messages": req.Messages})
		err := d.Defer(llm.WithUnit(ctx, unit), llm.DeferredRequest{Stage: req.Stage, Model: req.Model, ID: llm.IdentityOf(req), N: 1, Body: body})
		if llm.ClassOf(err) != llm.ClassDeferred {
			t.Fatalf("Defer: %v", err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for b.Waiting() > 0 {
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l := &loop{batcher: b, log: slog.New(slog.DiscardHandler)}
	l.settle("settled")
	if got := slices.Sorted(maps.Keys(l.takeReady())); !slices.Equal(got, []string{"waiting"}) {
		t.Errorf("the next wave runs %v, want [waiting]: a problem settled this session ran again", got)
	}
}
