package corpus

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// Snapshot is the listed shards of a run directory, all opened at once. A
// running run commits new shards and, when it finishes, merges small ones
// and removes them; an open file stays readable after its removal, so a
// reader of a snapshot reads one consistent set of records, the one the
// manifest listed, however the run goes on meanwhile. It takes no lock.
type Snapshot struct {
	Dir      string
	Manifest Manifest
	// InUse: a process held the run directory when the snapshot was taken;
	// records committed after it are not in it.
	InUse bool
	files []fsys.File // nil where the shard could not be opened
	errs  []error     // why, for those
	paths []string

	mu      sync.Mutex
	footers []footer // each shard's parquet footer, decoded at its first read
}

// footer is a shard's decoded parquet footer and the file size it was read
// at.
type footer struct {
	pf   *parquet.File
	size int64
}

// snapshotAttempts bounds how often OpenSnapshot starts over because a
// shard went away between the manifest read and its open.
const snapshotAttempts = 5

// OpenSnapshot opens the listed shards of the run directory dir. When a
// listed shard is gone by the time it is opened and the manifest has
// changed (a compaction switched to a merged shard), it starts over with the
// new manifest. A shard that cannot be opened otherwise does not fail the
// snapshot, so that a reader can report it and read the others: Check
// names the first such problem, ScanSnapshot returns it for that shard.
func OpenSnapshot(dir string) (*Snapshot, error) {
	for attempt := 1; ; attempt++ {
		s, gone, err := openSnapshotOnce(dir)
		if err == nil || !gone || attempt == snapshotAttempts {
			return s, err
		}
	}
}

// openSnapshotOnce is one attempt; gone reports that a listed shard was
// missing and the manifest has changed since it was read.
func openSnapshotOnce(dir string) (s *Snapshot, gone bool, err error) {
	inUse, err := InUse(dir)
	if err != nil {
		return nil, false, err
	}
	m, err := readManifest(fsys.OS, dir)
	if err != nil {
		return nil, false, err
	}
	s = &Snapshot{Dir: dir, Manifest: m, InUse: inUse, footers: make([]footer, len(m.Shards))}
	for _, sh := range m.Shards {
		path := filepath.Join(dir, filepath.FromSlash(sh.File))
		f, err := fsys.OS.OpenFile(path, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			again, rerr := readManifest(fsys.OS, dir)
			if rerr == nil && !again.UpdatedAt.Equal(m.UpdatedAt) {
				_ = s.Close() // a snapshot only reads
				return nil, true, fmt.Errorf("reading run %s: listed shard %s is missing: %w", dir, sh.File, err)
			}
		}
		if err != nil {
			err = fmt.Errorf("reading run %s: listed shard %s: %w", dir, sh.File, err)
			f = nil // a nil interface, not a nil *os.File in one
		}
		s.files, s.errs, s.paths = append(s.files, f), append(s.errs, err), append(s.paths, path)
	}
	return s, false, nil
}

// Check reports the first shard that could not be opened or whose size
// differs from the manifest's.
func (s *Snapshot) Check() error {
	for i, sh := range s.Manifest.Shards {
		size, err := s.Size(i)
		if err != nil {
			return err
		}
		if size != sh.Bytes {
			return fmt.Errorf("reading run %s: shard %s has %d bytes, manifest says %d", s.Dir, sh.File, size, sh.Bytes)
		}
	}
	return nil
}

// Len is the number of shards.
func (s *Snapshot) Len() int { return len(s.files) }

// Path is the path shard i had when it was opened.
func (s *Snapshot) Path(i int) string { return s.paths[i] }

// Size is the size of shard i as opened.
func (s *Snapshot) Size(i int) (int64, error) {
	if s.files[i] == nil {
		return 0, s.errs[i]
	}
	st, err := s.files[i].Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Close closes every shard.
func (s *Snapshot) Close() error {
	var errs []error
	for _, f := range s.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	s.files = nil
	return errors.Join(errs...)
}

// ScanSnapshot streams the rows of shard i of s to fn as T, reading only
// T's columns, as Scan does.
func ScanSnapshot[T any](s *Snapshot, i int, fn func(*T) error) error {
	if s.files[i] == nil {
		return s.errs[i]
	}
	_, err := scanOpen(s.files[i], s.paths[i], func(_ io.ReaderAt, path string, size int64) (*parquet.File, error) {
		pf, err := s.footer(i, size)
		if err != nil {
			return nil, err
		}
		return projectable[T](pf, path)
	}, scanBatch, fn)
	return err
}

// footer is shard i's parquet footer, checked and decoded (openParquet)
// at the first read of the shard at this size and kept for the next: an
// audit reads each shard several times, once per figure it computes. A
// footer that does not open is not kept, so every read reports it.
func (s *Snapshot) footer(i int, size int64) (*parquet.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ft := s.footers[i]; ft.pf != nil && ft.size == size {
		return ft.pf, nil
	}
	pf, err := openParquet(s.files[i], s.paths[i], size)
	if err != nil {
		return nil, err
	}
	s.footers[i] = footer{pf: pf, size: size}
	return pf, nil
}

// checkDamage reports the shards whose bytes no longer match the manifest
// as a DamageError, which says how to recover. It looks at the open files
// (a shard a running compaction removed since is not damage): one with the
// recorded size and modification time is taken as intact, any other is
// hashed.
func (s *Snapshot) checkDamage() error {
	var damaged []DamagedShard
	for i, sh := range s.Manifest.Shards {
		why, err := s.damageOf(i)
		if err != nil {
			return err
		}
		if why != "" {
			damaged = append(damaged, DamagedShard{File: sh.File, Rows: sh.Rows, Reason: why})
		}
	}
	if len(damaged) > 0 {
		return &DamageError{Dir: s.Dir, Shards: damaged}
	}
	return nil
}

// damageOf is damageOf for shard i of the snapshot, through its open file.
func (s *Snapshot) damageOf(i int) (string, error) {
	if s.files[i] == nil {
		if errors.Is(s.errs[i], fs.ErrNotExist) {
			return "missing", nil
		}
		return "", s.errs[i]
	}
	return damageOfOpen(s.files[i], s.paths[i], s.Manifest.Shards[i], false)
}
