package corpus

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
)

// TestRunRenamesAreSynced: every rename the crash scenario makes (shards
// committed and compacted, id lists, the manifest, the failures log's
// compaction) is between syncs of its directories.
func TestRunRenamesAreSynced(t *testing.T) {
	t.Parallel()
	if bad := crashfs.UnsyncedRenames(cleanRun(t)); len(bad) > 0 {
		t.Errorf("renames without a directory sync before and after: %v", bad)
	}
}
