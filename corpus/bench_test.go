package corpus

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// realisticRecords are full records: 8 rollouts of about 2 KB each, a rubric
// of 8 judged items, a 600-byte problem.
func realisticRecords(n int) []schema.Record {
	rng := rand.New(rand.NewPCG(42, 42))
	out := make([]schema.Record, n)
	for i := range out {
		rec := schema.Record{
			ID: testID(i), Source: "math", Split: "train", Problem: prose(rng, 600), Answer: prose(rng, 12),
			Style: schema.StyleSRaR, NCorrect: 4, PassRate: 0.5,
			Provenance: schema.Provenance{RolloutModel: "qwen3-8b", DistillModel: "qwen3-32b", JudgeModel: ptr("qwen3-32b"),
				RolloutTemplate: "0123456789abcdef", DistillTemplate: "fedcba9876543210", JudgeTemplate: ptr("00ff00ff00ff00ff"),
				SatisfyTemplate: ptr("ff00ff00ff00ff00"), SpecVersion: schema.SpecVersion, ToolVersion: "bench",
				CreatedAt: time.UnixMilli(1_780_000_000_000 + int64(i)).UTC()},
			Usage: schema.Usage{Requests: 12, PromptTokens: 9000, CompletionTokens: 5000, CostUSD: 0.01},
		}
		for j := range 8 {
			rec.Rollouts = append(rec.Rollouts, schema.Rollout{Index: int32(j), Text: prose(rng, 2048),
				ExtractedAnswer: prose(rng, 8), Correct: j%2 == 0, FormatOK: true, FinishReason: "stop",
				CompletionTokens: ptr(int32(600))})
			it := schema.Item{ID: int32(j + 1), Type: schema.ItemTypes[j%4], Text: prose(rng, 150), Weight: 1}
			it.Polarity = schema.PolarityOf(it.Type)
			it.Valid, it.ValidReason, it.SatRate, it.Corr = ptr(true), ptr(prose(rng, 80)), ptr(0.5), ptr(0.3)
			rec.Rubric = append(rec.Rubric, it)
		}
		out[i] = rec
	}
	return out
}

// BenchmarkAppendCommit appends and commits 10,000 records per iteration
// with the default shard and row-group sizes.
func BenchmarkAppendCommit(b *testing.B) {
	const n = 10_000
	recs := realisticRecords(n)
	var bytes int64
	b.ResetTimer()
	for b.Loop() {
		dir := b.TempDir()
		r, err := Open(dir, Options{ToolVersion: "bench", Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		for i := range recs {
			if err := r.Append(&recs[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		bytes = 0
		for _, s := range r.Manifest().Shards {
			bytes += s.Bytes
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(bytes)/n, "bytes/record")
}

// BenchmarkCheckpoints appends 2,000 records and commits every 50, as a
// run with a slow model and frequent checkpoints does: 40 small shards per
// iteration. Its B/op shows what each shard write costs beyond its data.
func BenchmarkCheckpoints(b *testing.B) {
	const n, every = 2_000, 50
	recs := realisticRecords(n)
	b.ResetTimer()
	for b.Loop() {
		r, err := Open(b.TempDir(), Options{ToolVersion: "bench", Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		for i := range recs {
			if err := r.Append(&recs[i]); err != nil {
				b.Fatal(err)
			}
			if (i+1)%every == 0 {
				if err := r.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
