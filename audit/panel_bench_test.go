package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

// BenchmarkJudgePanelWithoutPanels measures the judge-panel section alone
// on a run directory of 20,000 records none of which has a panel (the
// common corpus: its shards have the panel column, empty). The section
// then reads one small column of each record and nothing else.
// VALIDATE_BENCH_DIR keeps the corpus there between runs.
func BenchmarkJudgePanelWithoutPanels(b *testing.B) {
	const n = 20_000
	root := os.Getenv("VALIDATE_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir := filepath.Join(root, "run-20k")
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		writeSynthetic(b, dir, n, n/4)
	}
	in, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := judgePanel(context.Background(), in, nil)
		if err != nil || p != nil {
			b.Fatalf("panel section %+v: %v", p, err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSatisfactionJudgeError measures the judge error's read of the
// satisfaction panels of 2,000 records (8 rollouts each, a panel of three
// judges on every rollout).
func BenchmarkSatisfactionJudgeError(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	r, err := corpus.Open(dir, corpus.Options{ShardRows: 500, ToolVersion: "bench", Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	r.SetJob("panel-job", map[string]string{"empirical.panel": "a: m, b: m, c: m"})
	judges := []synthcorpus.PanelJudge{{Name: "a", Model: "m", FalseValid: 0.05, FalseInvalid: 0.05},
		{Name: "b", Model: "m", FalseValid: 0.1, FalseInvalid: 0.1}, {Name: "c", Model: "m", FalseValid: 0.1, FalseInvalid: 0.1}}
	o := synthcorpus.Options{Records: 2000, Rollouts: 8, JudgeNoise: -1, Seed: 9}
	for i := range o.Records {
		rec, _ := o.Record(i)
		synthcorpus.AddPanel(&rec, 5, judges...)
		if err := r.Append(&rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	in, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := SatisfactionJudgeError(context.Background(), in); !ok || err != nil {
			b.Fatalf("no rate: %v", err)
		}
	}
}
