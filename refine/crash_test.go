package refine

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

// TestRefineCrashAtEveryOperation: a refinement written to the crash
// file system and cut off by a power loss at any operation that changes
// the disk leaves --out either absent or whole (its manifest verified,
// refine.json there), never half; the directory is renamed into place
// between two syncs of its parent.
func TestRefineCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	if err := synthcorpus.Write(src, synthcorpus.Options{Records: 12, Seed: 9, ShardRows: 12}, nil); err != nil {
		t.Fatal(err)
	}
	crashEveryOperation(t, func(fsy fsys.FS, out string) error {
		_, err := Run(context.Background(), Config{Src: src, Out: out, Options: DefaultOptions(), ShardRows: 8, FS: fsy})
		return err
	}, SummaryName)
}

// crashEveryOperation runs refine (writing its corpus to out on the file
// system it is given) once on a clean crash file system, then once with a
// power loss at each operation of that run that changed the disk (make
// test: the cover crashCover picks; make test-long: every one): --out is
// then absent or whole (its manifest verified, the files named there), and
// every rename had a sync of its directory before and after.
func crashEveryOperation(t *testing.T, refine func(fsy fsys.FS, out string) error, files ...string) {
	t.Helper()
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
	clean := newFS()
	setup := len(clean.Ops())
	if err := refine(clean, out); err != nil {
		t.Fatal(err)
	}
	ops := clean.Ops()[setup:]
	if len(ops) == 0 {
		t.Fatal("the refinement wrote nothing through the given file system")
	}
	if bad := crashfs.UnsyncedRenames(ops); len(bad) > 0 {
		t.Errorf("renames without a directory sync before and after: %v", bad)
	}
	var mutating []crashfs.Op
	for _, op := range ops {
		if op.Mutates() {
			mutating = append(mutating, op)
		}
	}
	for _, op := range crashCover(t, mutating) {
		c := newFS()
		c.CrashAt(op.Index)
		if err := refine(c, out); !errors.Is(err, crashfs.ErrCrashed) {
			t.Fatalf("crash at %v: %v", op, err)
		}
		after := c.CrashClone(crashfs.CrashOptions{})
		if _, err := after.Stat(out); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if v, err := corpus.VerifyFS(after, out); err != nil || !v.OK() {
			t.Fatalf("crash at %v: --out is there but not whole: %v %v", op, err, v.Problems)
		}
		for _, name := range files {
			if _, err := fsys.ReadFile(after, filepath.Join(out, name)); err != nil {
				t.Fatalf("crash at %v: --out is there without %s: %v", op, name, err)
			}
		}
	}
}
