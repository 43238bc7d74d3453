package llm

import (
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// faultFS is the real file system with every operation recorded and, when
// fail says so, failed.
type faultFS struct {
	mu   sync.Mutex
	ops  []string
	fail func(op, name string) error
	// hold, when set, runs before each operation with the lock not held,
	// so it may block one operation while others go on.
	hold func(op, name string)
}

type faultFile struct {
	fsys.File
	fs *faultFS
}

func (f *faultFS) check(op, name string) error {
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		hold(op, name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op+" "+filepath.Base(name))
	if f.fail != nil {
		return f.fail(op, name)
	}
	return nil
}

func (f *faultFS) setFail(fail func(op, name string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

func (f *faultFS) setHold(hold func(op, name string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = hold
}

// count returns how many recorded operations start with prefix.
func (f *faultFS) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, op := range f.ops {
		if strings.HasPrefix(op, prefix) {
			n++
		}
	}
	return n
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	if err := f.check("open", name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := fsys.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFS) Rename(o, n string) error {
	if err := f.check("rename", o); err != nil {
		return err
	}
	return fsys.OS.Rename(o, n)
}

func (f *faultFS) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return fsys.OS.Remove(name)
}

func (f *faultFS) MkdirAll(p string, perm fs.FileMode) error  { return fsys.OS.MkdirAll(p, perm) }
func (f *faultFS) ReadDir(name string) ([]fs.DirEntry, error) { return fsys.OS.ReadDir(name) }
func (f *faultFS) Stat(name string) (fs.FileInfo, error)      { return fsys.OS.Stat(name) }

func (f *faultFS) SyncDir(dir string) error {
	if err := f.check("syncdir", dir); err != nil {
		return err
	}
	return fsys.OS.SyncDir(dir)
}

func (f *faultFS) Lock(file fsys.File) (bool, error) {
	if err := f.check("lock", file.Name()); err != nil {
		return false, err
	}
	return fsys.OS.Lock(file.(*faultFile).File)
}

func (f *faultFS) LockShared(file fsys.File) (bool, error) {
	if err := f.check("lockshared", file.Name()); err != nil {
		return false, err
	}
	return fsys.OS.(fsys.SharedLocker).LockShared(file.(*faultFile).File)
}

func (f *faultFS) Unlock(file fsys.File) error { return fsys.OS.Unlock(file.(*faultFile).File) }

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.check("write", f.Name()); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check("write", f.Name()); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check("sync", f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check("truncate", f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// noIndexFS hides saved indexes, so an open reads the whole log.
func noIndexFS() *faultFS {
	return &faultFS{fail: func(op, name string) error {
		if op == "open" && strings.HasSuffix(name, ".idx") {
			return fs.ErrNotExist
		}
		return nil
	}}
}

// TestCacheWritesThroughItsFS: the lock, every write and every sync of the
// log and the saved index go through the cache's file system.
func TestCacheWritesThroughItsFS(t *testing.T) {
	ffs := &faultFS{}
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil, CacheFS(ffs))
	if ffs.count("lock cache.db") != 1 || ffs.count("write cache.db") != 1 || ffs.count("sync cache.db") != 1 || ffs.count("syncdir") != 1 {
		t.Errorf("creating the log: %v", ffs.ops)
	}
	putN(t, c, 0, 3)
	if got := ffs.count("sync cache.db"); got != 4 {
		t.Errorf("%d syncs of the log after 3 sequential puts, want 4: %v", got, ffs.ops)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if ffs.count("rename .cache.db.idx.tmp") != 1 || ffs.count("sync .cache.db.idx.tmp") != 1 {
		t.Errorf("saving the index: %v", ffs.ops)
	}
}

// TestCacheWriteFailureIsFatal: a failed write or fsync is returned by Put
// and every Put after it, and Chat turns it into a fatal error that stops
// the run, not a warning.
func TestCacheWriteFailureIsFatal(t *testing.T) {
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			ffs := &faultFS{}
			path := filepath.Join(t.TempDir(), "cache.db")
			cache := openCache(t, path, nil, CacheFS(ffs))
			defer cache.Close()
			putN(t, cache, 0, 1)
			ffs.setFail(func(o, name string) error {
				if o == op && filepath.Base(name) == "cache.db" {
					return syscall.EIO
				}
				return nil
			})
			err := cache.Put(testID("x"), []byte("v"), Usage{})
			if !errors.Is(err, syscall.EIO) || !errors.Is(err, errCacheWrite) {
				t.Fatalf("Put: %v; want EIO", err)
			}
			if op == "sync" && !errors.Is(err, fsys.ErrNotDurable) {
				t.Errorf("Put after a failed fsync: %v; want it marked fsys.ErrNotDurable", err)
			}
			ffs.setFail(nil)
			if err := cache.Put(testID("y"), []byte("v"), Usage{}); !errors.Is(err, syscall.EIO) {
				t.Errorf("Put after a failed %s: %v; want the failure again", op, err)
			}

			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
			c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
			_, err = c.Chat(t.Context(), simpleRequest("q"))
			var e *Error
			if !errors.As(err, &e) || e.Class != ClassFatal || e.Reason != "cache_write" || !errors.Is(err, syscall.EIO) {
				t.Fatalf("Chat: %v; want a fatal cache_write error", err)
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
