package refine

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/schema"
)

// TestFromStatsCrashAtEveryOperation: distill refine --from-stats writes
// through the file system seam, so a power loss at any operation that
// changes the disk leaves --out either absent or whole (its manifest
// verified, from-stats.json and the per-record file there), and the
// directory is renamed into place between two syncs of its parent.
func TestFromStatsCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, state := filepath.Join(dir, "src"), filepath.Join(dir, "state")
	if err := synthcorpus.Write(src, synthcorpus.Options{Records: 6, Seed: 3, Style: schema.StyleSRaR, Items: 6}, nil); err != nil {
		t.Fatal(err)
	}
	byID := runtest.ReadCorpus(t, src)
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	recs := make([]*schema.Record, len(ids))
	for i, id := range ids {
		recs[i] = byID[id]
	}
	liveRun(t, recs, state)

	const out = "/data/refined"
	newFS := func() *crashfs.FS {
		c := crashfs.New()
		if err := c.MkdirAll("/data", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := c.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	refine := func(fsy fsys.FS) error {
		_, err := FromStats(context.Background(), StatsConfig{Src: src, Out: out, StatsDir: state, ShardRows: 4, FS: fsy})
		return err
	}
	clean := newFS()
	setup := len(clean.Ops())
	if err := refine(clean); err != nil {
		t.Fatal(err)
	}
	ops := clean.Ops()[setup:]
	if len(ops) == 0 {
		t.Fatal("the refinement wrote nothing through the given file system")
	}
	if bad := crashfs.UnsyncedRenames(ops); len(bad) > 0 {
		t.Errorf("renames without a directory sync before and after: %v", bad)
	}
	for _, op := range ops {
		if !op.Mutates() {
			continue
		}
		c := newFS()
		c.CrashAt(op.Index)
		if err := refine(c); !errors.Is(err, crashfs.ErrCrashed) {
			t.Fatalf("crash at %v: %v", op, err)
		}
		after := c.CrashClone(crashfs.CrashOptions{})
		if _, err := after.Stat(out); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if v, err := corpus.VerifyFS(after, out); err != nil || !v.OK() {
			t.Fatalf("crash at %v: --out is there but not whole: %v %v", op, err, v.Problems)
		}
		for _, name := range []string{corpus.FromStatsName, corpus.FromStatsRecordsName} {
			if _, err := fsys.ReadFile(after, filepath.Join(out, name)); err != nil {
				t.Fatalf("crash at %v: --out is there without %s: %v", op, name, err)
			}
		}
	}
}
