// Package faultfs is the real file system with every operation recorded,
// and failed or held on cue, for tests of what durable state does when a
// write, a sync or a rename fails, or while a sync is slow. For crashes and
// torn writes, use crashfs, the in-memory file system that loses what was
// not synced.
package faultfs

import (
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// FS is the real file system (fsys.OS) with every operation recorded and,
// when its fail function says so, failed; the zero FS records and passes
// everything through.
type FS struct {
	mu   sync.Mutex
	ops  []string
	fail func(op, name string) error
	// hold, when set, runs before each operation with the lock not held,
	// so it may block one operation while others go on.
	hold func(op, name string)
}

// faultFile is a file of FS: its writes, syncs and truncations are checked.
type faultFile struct {
	fsys.File
	fs *FS
}

// check records op on name, runs the hold function, and returns what the
// fail function says.
func (f *FS) check(op, name string) error {
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

// SetFail makes every later operation call fail with its kind (open,
// rename, remove, syncdir, lock, lockshared, write, sync, truncate) and
// file name, and fail with what it returns; nil passes everything.
func (f *FS) SetFail(fail func(op, name string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

// SetHold makes every later operation call hold first, with no lock held,
// so a test may block one operation while others go on; nil holds nothing.
func (f *FS) SetHold(hold func(op, name string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = hold
}

// Count returns how many recorded operations start with prefix (an
// operation is recorded as its kind, a space and the file's base name).
func (f *FS) Count(prefix string) int {
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

func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	if err := f.check("open", name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := fsys.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *FS) Rename(o, n string) error {
	if err := f.check("rename", o); err != nil {
		return err
	}
	return fsys.OS.Rename(o, n)
}

func (f *FS) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return fsys.OS.Remove(name)
}

func (f *FS) MkdirAll(p string, perm fs.FileMode) error  { return fsys.OS.MkdirAll(p, perm) }
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) { return fsys.OS.ReadDir(name) }
func (f *FS) Stat(name string) (fs.FileInfo, error)      { return fsys.OS.Stat(name) }

func (f *FS) SyncDir(dir string) error {
	if err := f.check("syncdir", dir); err != nil {
		return err
	}
	return fsys.OS.SyncDir(dir)
}

func (f *FS) Lock(file fsys.File) (bool, error) {
	if err := f.check("lock", file.Name()); err != nil {
		return false, err
	}
	return fsys.OS.Lock(file.(*faultFile).File)
}

func (f *FS) LockShared(file fsys.File) (bool, error) {
	if err := f.check("lockshared", file.Name()); err != nil {
		return false, err
	}
	return fsys.OS.(fsys.SharedLocker).LockShared(file.(*faultFile).File)
}

func (f *FS) Unlock(file fsys.File) error { return fsys.OS.Unlock(file.(*faultFile).File) }

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

// Ops returns a copy of the operations recorded so far.
func (f *FS) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}
