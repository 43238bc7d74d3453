package refine

import (
	"context"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
)

// TestFromStatsCrashAtEveryOperation: distill refine --from-stats writes
// through the file system seam, so a power loss at any operation that
// changes the disk leaves --out either absent or whole (its manifest
// verified, from-stats.json and the per-record file there), and the
// directory is renamed into place between two syncs of its parent.
func TestFromStatsCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	src, state, _ := liveCorpus(t, t.TempDir())
	crashEveryOperation(t, func(fsy fsys.FS, out string) error {
		_, err := FromStats(context.Background(), StatsConfig{Src: src, Out: out, StatsDir: state, ShardRows: 4, FS: fsy})
		return err
	}, corpus.FromStatsName, corpus.FromStatsRecordsName)
}
