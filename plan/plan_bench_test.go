package plan

import (
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/pipeline"

	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// BenchmarkPlanProjection measures how close distill plan's projection
// from a 100-problem pilot comes to the real run of the whole input, on
// the simulated endpoint with its latency spread (uniform in 0.5-1.5 times
// the mean) and its spread of token lengths: it plans in one run
// directory, runs the whole job afresh in another, and reports the
// projection's error, in percent, for requests, prompt and completion
// tokens, cost and wall time, and whether each real figure fell inside the
// projected range. PLAN_BENCH_PROBLEMS sets the input's size (default
// 2000), PLAN_BENCH_LATENCY the mean latency (default 300ms).
func BenchmarkPlanProjection(b *testing.B) {
	problems := envInt("PLAN_BENCH_PROBLEMS", 2000)
	latency := 300 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("PLAN_BENCH_LATENCY")); err == nil {
		latency = d
	}
	const pilot, concurrency = 100, 32
	dir := b.TempDir()
	rows := planProblems(problems)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(b, input, rows)
	cfg := sim.Config{Answers: runtest.AnswersOf(rows), Latency: latency, Seed: 3}
	for i := range b.N {
		job := func(out string) job.Job {
			j := runtest.TestJob(input, filepath.Join(dir, fmt.Sprintf("%s-%d", out, i)), "http://sim.invalid/v1")
			j.Rollout.N = 8
			j.Limits.Concurrency = concurrency
			j.Limits.AttemptTimeout = time.Minute
			j.Output.ShardRows = 1000
			j.Output.CheckpointInterval = 10 * time.Second
			return j
		}
		srv := sim.New(cfg)
		opt := pipeline.Options{HTTPClient: &http.Client{Transport: srv.Transport()}}
		plan, err := Run(context.Background(), job("plan"), opt, Options{Sample: pilot})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		rep, err := pipeline.Run(context.Background(), job("real"), opt)
		elapsed := time.Since(start).Seconds()
		srv.Close()
		if err != nil || rep.Status != pipeline.StatusFinished {
			b.Fatalf("real run: %v %+v", err, rep)
		}
		reportProjection(b, plan, rep, elapsed)
	}
}

// reportProjection reports the projection's error against the real run,
// in percent, and whether each real figure fell inside the projected range.
func reportProjection(b *testing.B, plan *corpus.PlanDoc, rep *pipeline.Report, elapsed float64) {
	t := rep.LLM.Total
	for _, f := range []struct {
		name string
		r    corpus.PlanRange
		real float64
	}{
		{"requests", plan.Total.Requests, float64(t.Requests + t.CacheHits)},
		{"prompt-tokens", plan.Total.PromptTokens, float64(t.PromptTokens)},
		{"completion-tokens", plan.Total.CompletionTokens, float64(t.CompletionTokens)},
		{"cost", plan.Total.CostUSD, t.CostUSD},
		{"wall", plan.Wall.WholeSeconds, elapsed},
		{"records", plan.Records, float64(rep.CorpusRows)},
	} {
		b.ReportMetric(100*(f.r.Value-f.real)/f.real, f.name+"-err-%")
		in := 0.0
		if f.real >= f.r.Low && f.real <= f.r.High {
			in = 1
		}
		b.ReportMetric(in, f.name+"-in-range")
		b.Logf("%s: projected %.4g (%.4g-%.4g), real %.4g (%+.1f%%)", f.name, f.r.Value, f.r.Low, f.r.High, f.real, 100*(f.r.Value-f.real)/f.real)
	}
	b.Logf("left out: projected %.4g (%.4g-%.4g), real %d; binding %s; bounds %+v; pilot %.1fs",
		plan.LeftOut.Value, plan.LeftOut.Low, plan.LeftOut.High, rep.Problems.LeftOut, plan.Wall.Binding, plan.Wall.Bounds, plan.PilotSeconds)
	b.ReportMetric(math.Round(elapsed), "real-run-s")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
