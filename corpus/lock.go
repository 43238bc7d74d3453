package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// ErrLocked is wrapped by Open's error when another process holds the run
// directory's LOCK.
var ErrLocked = errors.New("run directory is locked")

// lockHolder is what the holder of LOCK writes into it, for the message a
// refused process prints.
type lockHolder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// runLock is a held LOCK file. The file itself is never removed (except by
// Abandon, of a directory this process created): unlinking a locked file
// lets two processes lock different inodes of the same name.
type runLock struct {
	fs fsys.FS
	f  fsys.File
}

// acquireLock takes dir's LOCK. created reports that the file was new.
func acquireLock(fsy fsys.FS, l Layout) (lk *runLock, created bool, err error) {
	path := l.Lock()
	_, statErr := fsy.Stat(path)
	f, err := fsy.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("opening lock file: %w", err)
	}
	held, err := fsy.Lock(f)
	if err != nil {
		_ = f.Close() // not locked, nothing written: err is the failure
		return nil, false, err
	}
	if held {
		who := describeHolder(f)
		_ = f.Close() // another process holds it; we wrote nothing
		return nil, false, fmt.Errorf("run directory %s is in use by another distill process (%s): %w", l.Dir, who, ErrLocked)
	}
	if err := writeHolder(f); err != nil { // the holder note is only a note: dropping the lock is what matters
		_ = fsy.Unlock(f)
		_ = f.Close()
		return nil, false, fmt.Errorf("writing lock holder into %s: %w", path, err)
	}
	return &runLock{fs: fsy, f: f}, errors.Is(statErr, fs.ErrNotExist), nil
}

// writeHolder writes this process into the held LOCK: in place, then trimmed,
// so a reader never sees an empty file.
func writeHolder(f fsys.File) error {
	host, _ := os.Hostname()
	info, err := json.Marshal(lockHolder{PID: os.Getpid(), Host: host, Started: time.Now().UTC()})
	if err != nil {
		return err
	}
	info = append(info, '\n')
	if _, err := f.WriteAt(info, 0); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(info))); err != nil {
		return err
	}
	return fsys.SyncFile(f)
}

func describeHolder(f fsys.File) string {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err != nil {
		return "holder unknown"
	}
	var h lockHolder
	if json.Unmarshal(data, &h) != nil || h.PID == 0 {
		return "holder unknown"
	}
	return fmt.Sprintf("pid %d on %s since %s", h.PID, h.Host, h.Started.Local().Format(time.RFC3339))
}

// release clears the holder note (best effort: it is only a note) and drops
// the lock.
func (l *runLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	name := l.f.Name()
	_ = l.f.Truncate(0) // best effort (above)
	uerr := l.fs.Unlock(l.f)
	cerr := l.f.Close()
	l.f = nil
	if uerr != nil {
		return fmt.Errorf("unlocking %s: %w", name, uerr)
	}
	if cerr != nil {
		return fmt.Errorf("closing lock file: %w", cerr)
	}
	return nil
}

// InUse reports whether a process holds the run directory dir now, without
// taking its lock: a report that says "running" while nothing holds LOCK is
// a run that died. A directory without LOCK is not in use.
func InUse(dir string) (bool, error) { return InUseFS(fsys.OS, dir) }

// InUseFS is InUse on fsy. A file system without shared locks is probed
// with an exclusive lock, dropped at once.
func InUseFS(fsy fsys.FS, dir string) (bool, error) {
	path := Layout{Dir: dir}.Lock()
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("probing the lock of %s: %w", dir, err)
	}
	defer func() { _ = f.Close() }()
	var held bool
	if sl, ok := fsy.(fsys.SharedLocker); ok {
		held, err = sl.LockShared(f)
	} else {
		held, err = fsy.Lock(f)
	}
	if err != nil || held {
		return held, err
	}
	return false, fsy.Unlock(f)
}
