// Package fsys is the one door through which the toolkit's durable state (a
// run directory's shards, manifest, failures log, lock and response cache)
// reaches the file system. FS names the operations whose order decides what
// survives a crash (create, write, sync, rename, remove, directory sync,
// lock); OS is the real one, and a test file system can record them, crash
// at any of them keeping only what was synced, or fail them on purpose.
//
// The helpers here (WriteFileAtomic, ReadFile) are written once against FS,
// so every package writes files the same crash-safe way.
package fsys

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	// Sync makes the file's contents durable. A file system that cannot
	// sync at all (ENOTSUP, EINVAL) is not an error; any other failure is,
	// and after it the file's contents cannot be trusted.
	Sync() error
	Truncate(size int64) error
}

// FS is the file system of durable state. Paths are OS paths.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm fs.FileMode) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the creations, renames and removals in dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on f without waiting. held is true when
	// another holder has it. The lock ends when f is closed or the process
	// dies.
	Lock(f File) (held bool, err error)
	// Unlock drops a lock taken by Lock.
	Unlock(f File) error
}

// ErrNotDurable is wrapped by the errors of WriteFileAtomic, MkdirAllSynced
// and SyncFile when a file or directory sync failed. After a failed fsync the
// kernel may have dropped the dirty pages, so what was written cannot be
// trusted to be on disk; a caller must stop writing, not retry.
var ErrNotDurable = errors.New("fsync failed, so data written may not be on disk")

// SyncFile syncs f; a failure wraps ErrNotDurable.
func SyncFile(f File) error {
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w: %w", f.Name(), ErrNotDurable, err)
	}
	return nil
}

// SyncDir syncs dir; a failure wraps ErrNotDurable.
func SyncDir(fsys FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("syncing directory %s: %w: %w", dir, ErrNotDurable, err)
	}
	return nil
}

// SharedLocker is an FS that can also take shared locks: any number of
// shared holders at once, and none while an exclusive Lock is held. Readers
// that must not see a file change under them (a base cache shared by
// several runs) take one.
type SharedLocker interface {
	// LockShared takes a shared lock on f without waiting. held is true
	// when another holder has an exclusive lock.
	LockShared(f File) (held bool, err error)
}

// OS is the real file system.
var OS FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Sync() error {
	if err := f.File.Sync(); err != nil && !syncUnsupported(err) {
		return err
	}
	return nil
}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // only read: closing loses nothing
	if err := d.Sync(); err != nil && !syncUnsupported(err) {
		return err
	}
	return nil
}

func (osFS) Lock(f File) (bool, error) {
	of, ok := f.(osFile)
	if !ok {
		return false, fmt.Errorf("locking %s: not a file of fsys.OS", f.Name())
	}
	return flock(of.File)
}

func (osFS) LockShared(f File) (bool, error) {
	of, ok := f.(osFile)
	if !ok {
		return false, fmt.Errorf("locking %s: not a file of fsys.OS", f.Name())
	}
	return flockShared(of.File)
}

func (osFS) Unlock(f File) error {
	of, ok := f.(osFile)
	if !ok {
		return fmt.Errorf("unlocking %s: not a file of fsys.OS", f.Name())
	}
	return funlock(of.File)
}

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old content or the new one, never a mix: it writes a temporary file of its
// own in path's directory (TempPath), syncs and closes it, then renames it
// over path between two syncs of the directory (RenameSynced). Two writers of
// the same path at once both succeed, the last rename winning.
func WriteFileAtomic(fsys FS, path string, data []byte, perm fs.FileMode) (err error) {
	tmp := TempPath(path)
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil { // the temporary file is dropped: err says why
			_ = f.Close()
			_ = fsys.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := SyncFile(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	return RenameSynced(fsys, tmp, path)
}

// TempPath is a new name for a temporary file that will become path, in
// path's directory: .NAME.RANDOM.tmp, its own, so that two writers never
// share one. IsTemp recognizes it.
func TempPath(path string) string {
	dir, name := filepath.Split(path)
	var b [6]byte
	rand.Read(b[:])
	return filepath.Join(dir, "."+name+"."+hex.EncodeToString(b[:])+".tmp")
}

// IsTemp reports whether name (a base name) is a temporary file TempPath
// made for a file named target, so that the owner of a directory can
// remove what a crash left.
func IsTemp(name, target string) bool {
	rest, ok := strings.CutPrefix(name, "."+target+".")
	if !ok {
		return false
	}
	rnd, ok := strings.CutSuffix(rest, ".tmp")
	if !ok || len(rnd) != 12 {
		return false
	}
	_, err := hex.DecodeString(rnd)
	return err == nil
}

// RenameSynced moves oldpath to newpath as durable state moves: it syncs
// oldpath's directory first, so that what moves is durably where it was (a
// file just made there), renames, then syncs newpath's directory, and
// oldpath's when it is another, so that the move survives a crash. A sync
// that fails wraps ErrNotDurable.
func RenameSynced(fsys FS, oldpath, newpath string) error {
	oldDir, newDir := dirOf(oldpath), dirOf(newpath)
	if err := SyncDir(fsys, oldDir); err != nil {
		return err
	}
	if err := fsys.Rename(oldpath, newpath); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", oldpath, newpath, err)
	}
	if err := SyncDir(fsys, newDir); err != nil {
		return err
	}
	if oldDir != newDir {
		return SyncDir(fsys, oldDir)
	}
	return nil
}

func dirOf(path string) string {
	if d := filepath.Dir(path); d != "" {
		return d
	}
	return "."
}

// ReadFile reads the whole file at path.
func ReadFile(fsys FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	return io.ReadAll(f)
}

// MkdirAllSynced creates dir and any missing parents, syncing each parent
// whose entries changed, so the new directories survive a crash.
func MkdirAllSynced(fsys FS, dir string, perm fs.FileMode) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("creating directory %s: %w", dir, err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, perm); err != nil {
		return fmt.Errorf("creating directory %s: %w", dir, err)
	}
	for _, d := range missing {
		if err := SyncDir(fsys, filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// RemoveAll removes path and everything under it. A missing path is not an
// error. It does not sync: a caller that needs the removal durable syncs the
// parent directory.
func RemoveAll(fsys FS, path string) error {
	st, err := fsys.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	if st.IsDir() {
		entries, err := fsys.ReadDir(path)
		if err != nil {
			return fmt.Errorf("removing %s: %w", path, err)
		}
		for _, e := range entries {
			if err := RemoveAll(fsys, filepath.Join(path, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}
