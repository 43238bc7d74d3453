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
	const n = 256 // two row groups
	if err := synthcorpus.Write(dir, synthcorpus.Options{Records: n, Rollouts: 2, Items: 3, Seed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1, func() {
		c, err := Open(t.Context(), []string{dir}, Options{})
		if err != nil || c.Len() != n {
			t.Fatalf("%v", err)
		}
		_ = c.Close()
	})
	t.Logf("opening %d records: %.0f allocations", n, allocs)
	if limit := openAllocs + maxAllocsPerRecord*n; allocs > float64(limit) {
		t.Errorf("opening %d records took %.0f allocations; want at most %d (%d a record and %d for the corpus)", n, allocs, limit, maxAllocsPerRecord, openAllocs)
	}
}

// maxAllocsPerRecord bounds the allocations of the index per record: its
// id, its items, the map of ids and the queue's order, and the Parquet
// footers and pages (57 a record when rows were decoded whole; about 6
// read by columns).
const maxAllocsPerRecord = 12

// openAllocs are the allocations of opening any corpus, whatever its
// size (its files, the run's manifest and report, the workers): about
// 1,700.
const openAllocs = 4000
