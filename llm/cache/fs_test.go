package cache

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/faultfs"
)

// noIndexFS hides saved indexes, so an open reads the whole log.
func noIndexFS() *faultfs.FS {
	ffs := &faultfs.FS{}
	ffs.SetFail(func(op, name string) error {
		if op == "open" && strings.HasSuffix(name, ".idx") {
			return fs.ErrNotExist
		}
		return nil
	})
	return ffs
}

// TestCacheWritesThroughItsFS: the lock, every write and every sync of the
// log and the saved index go through the cache's file system.
func TestCacheWritesThroughItsFS(t *testing.T) {
	t.Parallel()
	ffs := &faultfs.FS{}
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil, WithFS(ffs))
	if ffs.Count("lock cache.db") != 1 || ffs.Count("write cache.db") != 1 || ffs.Count("sync cache.db") != 1 || ffs.Count("syncdir") != 1 {
		t.Errorf("creating the log: %v", ffs.Ops())
	}
	putN(t, c, 0, 3)
	if got := ffs.Count("sync cache.db"); got != 4 {
		t.Errorf("%d syncs of the log after 3 sequential puts, want 4: %v", got, ffs.Ops())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if ffs.Count("rename .cache.db.idx.tmp") != 1 || ffs.Count("sync .cache.db.idx.tmp") != 1 {
		t.Errorf("saving the index: %v", ffs.Ops())
	}
}

// TestCacheWriteFailureIsSticky: a failed write or fsync is returned by Put
// and every Put after it, and by Close; what was durable before the failure
// is still there. (llm's TestCacheWriteFailureIsFatal: Chat makes it a
// fatal error that stops the run.)
func TestCacheWriteFailureIsSticky(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			ffs := &faultfs.FS{}
			path := filepath.Join(t.TempDir(), "cache.db")
			cache := openCache(t, path, nil, WithFS(ffs))
			defer cache.Close()
			putN(t, cache, 0, 1)
			ffs.SetFail(func(o, name string) error {
				if o == op && filepath.Base(name) == "cache.db" {
					return syscall.EIO
				}
				return nil
			})
			err := cache.Put(testID("x"), []byte("v"), Usage{})
			if !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrWrite) {
				t.Fatalf("Put: %v; want EIO", err)
			}
			if op == "sync" && !errors.Is(err, fsys.ErrNotDurable) {
				t.Errorf("Put after a failed fsync: %v; want it marked fsys.ErrNotDurable", err)
			}
			ffs.SetFail(nil)
			if err := cache.Put(testID("y"), []byte("v"), Usage{}); !errors.Is(err, syscall.EIO) {
				t.Errorf("Put after a failed %s: %v; want the failure again", op, err)
			}
			if !strings.Contains(err.Error(), "cache.db") {
				t.Errorf("the error does not name the file: %v", err)
			}
			if err := cache.Close(); !errors.Is(err, syscall.EIO) {
				t.Errorf("Close: %v; want the write failure", err)
			}
			// What was durable before the failure is still there.
			c2 := openCache(t, path, nil)
			defer c2.Close()
			wantValues(t, c2, 0, 1)
		})
	}
}
