package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

// BenchmarkDiscrimination100k audits, discrimination section included, a
// synthetic run directory of 100,000 records x 8 rollouts x 10 items, every
// rollout with a verdict on every item (internal/testkit/synthcorpus), and reports
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
	write := func(dir string) {
		if err := synthcorpus.Write(dir, synthcorpus.Options{Records: n, Rollouts: 8, Items: 10, Seed: 1}, nil); err != nil {
			b.Fatal(err)
		}
	}
	benchmarkAudit(b, filepath.Join(root, "synth-100000-8-10-1"), n, write, func(rep *Report) error {
		if d := rep.Discrimination; d == nil || d.Measured == 0 {
			return fmt.Errorf("the discrimination section measured nothing: %+v", d)
		}
		return nil
	})
}
