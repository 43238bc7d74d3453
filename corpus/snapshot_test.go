package corpus

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
	"github.com/rubricforge/rubricforge/schema"
)

// smallShardsRun writes n records in shards of 3, as checkpoints leave them,
// and returns the run still open (its lock held, as by a running run).
func smallShardsRun(t *testing.T, dir string, n int) (*Run, []schema.Record) {
	t.Helper()
	recs := genRecords(8, 0, n)
	r := openRun(t, dir, Options{ShardRows: 1000, ToolVersion: "test"})
	for i := range recs {
		if err := r.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			if err := r.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	return r, recs
}

// TestSnapshotSurvivesACompaction: the shards of a snapshot stay readable
// after the running run merged them away.
func TestSnapshotSurvivesACompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, recs := smallShardsRun(t, dir, 30)
	snap, err := OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if !snap.InUse || snap.Len() != 10 {
		t.Fatalf("snapshot: in use %v, %d shards", snap.InUse, snap.Len())
	}
	if c, err := r.Compact(); err != nil || c.Merged != 10 {
		t.Fatalf("compact: %+v %v", c, err)
	}
	closeRun(t, r)
	n := 0
	for i := range snap.Len() {
		if err := ScanSnapshot(snap, i, func(*recordHead) error { n++; return nil }); err != nil {
			t.Fatalf("shard %d after the compaction: %v", i, err)
		}
	}
	if n != len(recs) {
		t.Errorf("read %d records, want %d", n, len(recs))
	}
}

// TestExportWhileTheRunCompacts: an export of a run that is still held and
// merges its shards meanwhile says the run is being written and exports
// every committed record; it never fails half way. (That a snapshot's
// shards outlive a compaction is TestSnapshotSurvivesACompaction's; this
// runs the two at once, in 2 rounds, 5 in the long form.)
func TestExportWhileTheRunCompacts(t *testing.T) {
	t.Parallel()
	for round := range longtest.Pick(t, 2, 5) {
		dir := filepath.Join(t.TempDir(), "run")
		r, recs := smallShardsRun(t, dir, 30)
		var logs bytes.Buffer
		opt := quietExportOptions(FormatJSONL, filepath.Join(t.TempDir(), "exp"))
		opt.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		var wg sync.WaitGroup
		var cerr error
		wg.Go(func() { _, cerr = r.Compact() })
		m, err := Export(context.Background(), dir, opt)
		wg.Wait()
		closeRun(t, r)
		if err != nil || cerr != nil {
			t.Fatalf("round %d: export %v, compaction %v", round, err, cerr)
		}
		if m.RecordsOut != int64(len(recs)) {
			t.Errorf("round %d: %d records exported, want %d", round, m.RecordsOut, len(recs))
		}
		if !strings.Contains(logs.String(), "still being written") {
			t.Errorf("round %d: no warning that the run is still being written:\n%s", round, logs.String())
		}
	}
}
