package corpus

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// exportBenchRecords are n records shaped like a real SRaR corpus: eight
// items and eight rollouts of about 1.5 KB each.
func exportBenchRecords(n int) []schema.Record {
	yes := true
	recs := make([]schema.Record, n)
	for i := range recs {
		rec := schema.Record{
			ID: fmt.Sprintf("%016x", uint64(i)*0x9E3779B97F4A7C15), Source: "bench", Split: benchSplit(i),
			Style: schema.StyleSRaR, Problem: fmt.Sprintf("Problem %d: ", i) + strings.Repeat("find the value of the sum. ", 12),
			Answer: fmt.Sprint(i), Provenance: exProvenance("fp", 1, true),
		}
		for j := range 8 {
			typ := schema.TypeSuggest
			switch j {
			case 5:
				typ = schema.TypePitfall
			case 6:
				typ = schema.TypeBonus
			case 7:
				typ = schema.TypeAnswer
			}
			rec.Rubric = append(rec.Rubric, schema.Item{ID: int32(j + 1), Type: typ, Text: fmt.Sprintf("Item %d checks that the solution ", j) +
				strings.Repeat("computes the intermediate quantity correctly ", 3), Weight: 1, Polarity: schema.PolarityOf(typ), Valid: &yes})
			rec.Rollouts = append(rec.Rollouts, schema.Rollout{Index: int32(j), Text: strings.Repeat(fmt.Sprintf("### Step %d: we compute %d. ", j, i*j), 50),
				ExtractedAnswer: fmt.Sprint(i), Correct: j%2 == 0, FormatOK: true, FinishReason: "stop"})
		}
		rec.Provenance.CreatedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		recs[i] = rec
	}
	return recs
}

// benchSplit puts 96% of the records in train, 2% each in validation and test.
func benchSplit(i int) string {
	switch i % 50 {
	case 48:
		return "validation"
	case 49:
		return "test"
	}
	return "train"
}

// BenchmarkExport exports a 2,000-record corpus; records/s is the figure.
func BenchmarkExport(b *testing.B) {
	dir := b.TempDir()
	run := filepath.Join(dir, "run")
	const n = 2000
	r, err := Open(run, Options{ShardRows: 500, ToolVersion: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	for _, rec := range exportBenchRecords(n) {
		if err := r.Append(&rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	for _, format := range ExportFormats {
		if format == FormatSRaRLines {
			continue // the same path as rar
		}
		b.Run(format, func(b *testing.B) {
			opt := quietExportOptions(format, filepath.Join(dir, "export-"+format))
			for b.Loop() {
				if _, err := Export(context.Background(), run, opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
