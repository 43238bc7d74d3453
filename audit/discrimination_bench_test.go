package audit

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/synthcorpus"
)

// BenchmarkDiscrimination100k audits, discrimination section included, a
// synthetic run directory of 100,000 records x 8 rollouts x 10 items, every
// rollout with a verdict on every item (internal/synthcorpus), and reports
// records per second and the peak Go heap. The corpus is written once,
// before the timer; DISCRIM_BENCH_DIR keeps it there for measuring the
// built command (go run ./internal/discrimbench, make bench-discrim: wall,
// CPU and peak RSS from outside).
func BenchmarkDiscrimination100k(b *testing.B) {
	const n = 100_000
	root := os.Getenv("DISCRIM_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir := filepath.Join(root, "synth-100000-8-10-1")
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		start := time.Now()
		if err := synthcorpus.Write(dir, synthcorpus.Options{Records: n, Rollouts: 8, Items: 10, Seed: 1}, nil); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %d records in %s", n, time.Since(start).Round(time.Millisecond))
	}
	in, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	peak := watchHeap()
	b.ResetTimer()
	for b.Loop() {
		rep, err := Audit(context.Background(), in, Options{})
		if err != nil || rep.Corpus.Records != n || rep.Discrimination == nil || rep.Discrimination.Measured == 0 {
			b.Fatalf("audited %d records (discrimination %+v): %v", rep.Corpus.Records, rep.Discrimination, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
}
