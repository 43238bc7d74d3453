package fsys_test

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
)

func TestSyncFailureIsNotDurable(t *testing.T) {
	tests := []struct {
		name string
		kind crashfs.Kind
	}{
		{"file sync", crashfs.OpSync},
		{"directory sync", crashfs.OpSyncDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := crashfs.New()
			if err := c.MkdirAll("/d", 0o755); err != nil {
				t.Fatal(err)
			}
			c.FailWhen(func(op crashfs.Op) bool { return op.Kind == tt.kind }, syscall.EIO)
			err := fsys.WriteFileAtomic(c, "/d/manifest.json", []byte("{}"), 0o644)
			if !errors.Is(err, fsys.ErrNotDurable) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("WriteFileAtomic = %v; want ErrNotDurable wrapping EIO", err)
			}
		})
	}
	c := crashfs.New()
	c.FailWhen(func(op crashfs.Op) bool { return op.Kind == crashfs.OpWrite }, syscall.ENOSPC)
	if err := fsys.WriteFileAtomic(c, "/m", []byte("{}"), 0o644); errors.Is(err, fsys.ErrNotDurable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a full disk: %v; want ENOSPC, not ErrNotDurable", err)
	}
	if ents, _ := c.ReadDir("/"); len(ents) != 0 {
		t.Errorf("a failed write left %v behind", ents)
	}
}

// TestMkdirAllSyncedSurvivesACrash: every new directory is listed durably
// in its parent, so a file synced into the deepest one survives.
func TestMkdirAllSyncedSurvivesACrash(t *testing.T) {
	for _, synced := range []bool{false, true} {
		c := crashfs.New()
		dir := "/a/run/shards"
		var err error
		if synced {
			err = fsys.MkdirAllSynced(c, dir, 0o755)
		} else {
			err = c.MkdirAll(dir, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFileAtomic(c, filepath.Join(dir, "x"), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
		after := c.CrashClone(crashfs.CrashOptions{})
		_, err = fsys.ReadFile(after, filepath.Join(dir, "x"))
		if synced && err != nil {
			t.Errorf("MkdirAllSynced: file lost in a crash: %v", err)
		}
		if !synced && err == nil {
			t.Errorf("plain MkdirAll: the file survived, so the crash model is too kind")
		}
	}
}

func TestRemoveAll(t *testing.T) {
	c := crashfs.New()
	for _, p := range []string{"/r/shards/part-00000.parquet", "/r/job.yaml", "/r/shards/broken/x"} {
		if err := c.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fsys.WriteFileAtomic(c, p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := fsys.RemoveAll(c, "/r"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat("/r"); err == nil {
		t.Error("/r still there")
	}
	if err := fsys.RemoveAll(c, "/r"); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
}
