package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
