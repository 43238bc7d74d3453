package review

import (
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

// TestOpenAllocatesLittlePerRecord: opening a corpus for review reads its
// index without decoding whole rows: a bounded number of allocations per
// record (the start of a 100,000-record review is spent there; see
// internal/bench/review for its time).
func TestOpenAllocatesLittlePerRecord(t *testing.T) { // not parallel: AllocsPerRun counts the whole process's
	dir := filepath.Join(t.TempDir(), "run")
	const n = 1000
	if err := synthcorpus.Write(dir, synthcorpus.Options{Records: n, Rollouts: 4, Items: 7, Seed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1, func() {
		c, err := Open(t.Context(), []string{dir}, Options{})
		if err != nil || c.Len() != n {
			t.Fatalf("%v", err)
		}
		_ = c.Close()
	})
	t.Logf("opening %d records: %.0f allocations, %.1f a record", n, allocs, allocs/n)
	if per := allocs / n; per > maxAllocsPerRecord {
		t.Errorf("opening %d records took %.0f allocations, %.1f a record; want at most %d", n, allocs, per, maxAllocsPerRecord)
	}
}

// maxAllocsPerRecord bounds the allocations of the index per record: its
// id, its items, the map of ids and the queue's order, and the Parquet
// footers and pages (57 a record when rows were decoded whole).
const maxAllocsPerRecord = 12
