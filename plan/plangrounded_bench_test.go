package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkPlanProjectionGrounded is BenchmarkPlanProjection for a
// grounded job: synthetic technical documents of varied length cut into
// passages (PLAN_BENCH_PROBLEMS of them, default 2000), a 100-passage
// pilot, two questions a passage, the enrich stage and the validity judge
// on, against the simulated endpoint with its latency and token-length
// spread. It reports the projection's error against the real run of the
// whole input.
func BenchmarkPlanProjectionGrounded(b *testing.B) {
	passages := envInt("PLAN_BENCH_PROBLEMS", 2000)
	latency := 300 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("PLAN_BENCH_LATENCY")); err == nil {
		latency = d
	}
	const pilot, concurrency, passageChars = 100, 32, 900
	dir := b.TempDir()
	input := filepath.Join(dir, "docs.jsonl")
	docs, cut := writeBenchDocuments(b, input, passages, passageChars)
	b.Logf("%d documents cut into %d passages", docs, cut)
	cfg := sim.Config{Latency: latency, Seed: 3}
	for i := range b.N {
		job := func(out string) job.Job {
			j := runtest.TestJob(input, filepath.Join(dir, fmt.Sprintf("%s-%d", out, i)), "http://sim.invalid/v1")
			j.Style = schema.StyleGrounded
			j.Grounded.PassageChars = passageChars
			j.Grounded.QuestionsPerPassage = 2
			j.Judge.Enabled = true
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
		if plan.Input.Unique != int64(cut) {
			b.Fatalf("the plan counts %d passages; the documents cut into %d", plan.Input.Unique, cut)
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

// writeBenchDocuments writes JSONL documents of 1 to 9 paragraphs of
// varied length until they cut into at least n passages of at most limit
// characters; it returns the documents and their passages.
func writeBenchDocuments(b *testing.B, path string, n, limit int) (docs, passages int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for k := 0; passages < n; k++ {
		topic := runtest.DocTopic(k)
		var text strings.Builder
		for p := range 1 + (k*7)%9 {
			fmt.Fprintf(&text, "The %s assembly %d of report %d keeps its output steady because a feedback path compares the measured quantity with its set point. ", topic, p, k)
			for s := range (k + p*3) % 5 {
				fmt.Fprintf(&text, "In trial %d the engineers raised the load by %d percent and recorded how the %s drifted before the controller corrected it. ", s, 5+(s*k)%40, topic)
			}
			text.WriteString("The residual error is what calibration must remove.\n\n")
		}
		cuts := source.PassagesIn(text.String(), job.GroundedStage{PassageChars: limit, MinPassageChars: job.DefaultMinPassageChars})
		if passages+cuts > n {
			continue // a shorter one next
		}
		if err := enc.Encode(map[string]string{"id": fmt.Sprintf("report-%05d", k), "title": "Report on the " + topic, "text": text.String()}); err != nil {
			b.Fatal(err)
		}
		docs++
		passages += cuts
	}
	return docs, passages
}
