package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkAudit100k audits a run directory of 100,000 records (SRaR and
// factual/process rubrics of 3 to 8 items, four rollouts each with
// satisfaction verdicts) in 20 shards, and reports records per second and
// the peak Go heap during the audit. The corpus is written once, before
// the timer; VALIDATE_BENCH_DIR keeps it there for measuring the command
// (e.g. /usr/bin/time -v validate DIR/run).
func BenchmarkAudit100k(b *testing.B) {
	const n = 100_000
	root := os.Getenv("VALIDATE_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	benchmarkAudit(b, filepath.Join(root, "run"), n, func(dir string) { writeSynthetic(b, dir, n, n/20) }, nil)
}

// benchmarkAudit audits the run directory dir of n records, written by
// write first unless it is there, and reports records per second and the
// peak Go heap during the audit; check, when set, looks at each report.
func benchmarkAudit(b *testing.B, dir string, n int64, write func(dir string), check func(*Report) error) {
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		start := time.Now()
		write(dir)
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
		if err != nil || rep.Corpus.Records != n {
			b.Fatalf("audited %d records: %v", rep.Corpus.Records, err)
		}
		if check != nil {
			if err := check(rep); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
}

// writeSynthetic writes n good records, made the way the fixture's are,
// as a run directory in shards of shardRows, one record in memory at a time.
func writeSynthetic(b *testing.B, dir string, n, shardRows int) {
	r, err := corpus.Open(dir, corpus.Options{ShardRows: shardRows, ToolVersion: "bench", Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	r.SetFingerprint("fp-bench")
	for i := range n {
		style := schema.StyleSRaR
		if i%10 == 7 {
			style = schema.StyleFactualProcess
		}
		rec := corpusfix.Record(i, style, nil, nil)
		rec.ID = fmt.Sprintf("b%06d", i)
		if err := r.Append(&rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
}

// watchHeap samples the Go heap every 5 ms until the returned function is
// called; that function returns the largest heap in use it saw.
func watchHeap() func() uint64 {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}
