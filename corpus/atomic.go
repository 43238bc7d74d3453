package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old content or the new one, never a mix: it writes dir/.name.tmp, fsyncs
// and closes it, renames it over path and fsyncs the directory. Two writers
// of the same path at once are not supported.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale %s: %w", tmp, err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := f.Write(data)
	if err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if n != len(data) {
		return fmt.Errorf("writing %s: wrote %d of %d bytes", tmp, n, len(data))
	}
	if err := syncFile(f); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", tmp, path, err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return nil
}

// syncFile fsyncs f, tolerating file systems that cannot.
func syncFile(f *os.File) error {
	if err := f.Sync(); err != nil && !syncUnsupported(err) {
		return err
	}
	return nil
}

// syncDir fsyncs a directory so that renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !syncUnsupported(err) {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
