package refine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

// TestRunStoppedLeavesNothing: a refinement whose context ends (Ctrl-C)
// returns the context's error and leaves neither --out nor its work
// directory. The context ends as the work directory's second commit is
// renamed into place (its manifest), long before the source is read.
func TestRunStoppedLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := synthcorpus.Write(src, synthcorpus.Options{Records: 1000, Seed: 5, ShardRows: 250}, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "refined")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopper := &cancelAtCommit{FS: fsys.OS, manifest: filepath.Join(tempDir(out), corpus.ManifestName), at: 2, cancel: cancel}
	_, err := Run(ctx, Config{Src: src, Out: out, Options: DefaultOptions(), ShardRows: 100, FS: stopper})
	if stopper.commits.Load() < 2 {
		t.Fatalf("Run ended (%v) after %d commits of its work directory, before it was stopped", err, stopper.commits.Load())
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	for _, p := range []string{out, tempDir(out)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is there after a stopped refine (%v)", p, err)
		}
	}
}

// cancelAtCommit is a file system that calls cancel once manifest has been
// renamed into place at times: a run's context ends right after a commit.
type cancelAtCommit struct {
	fsys.FS
	manifest string
	at       int64
	cancel   context.CancelFunc
	commits  atomic.Int64
}

func (c *cancelAtCommit) Rename(oldpath, newpath string) error {
	err := c.FS.Rename(oldpath, newpath)
	if err == nil && newpath == c.manifest && c.commits.Add(1) == c.at {
		c.cancel()
	}
	return err
}
