package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrLocked is wrapped by Open's error when another process holds the run
// directory's LOCK.
var ErrLocked = errors.New("run directory is locked")

// lockName is the lock file inside a run directory.
const lockName = "LOCK"

// lockHolder is what the holder of LOCK writes into it, for the message a
// refused process prints.
type lockHolder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// runLock is a held LOCK file. The file itself is never removed: unlinking a
// flock'ed file lets two processes lock different inodes of the same name.
type runLock struct {
	f *os.File
}

func acquireLock(dir string) (*runLock, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	held, err := flockFile(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if held {
		who := describeHolder(f)
		f.Close()
		return nil, fmt.Errorf("run directory %s is in use by another distill process (%s): %w", dir, who, ErrLocked)
	}
	host, _ := os.Hostname()
	info, err := json.Marshal(lockHolder{PID: os.Getpid(), Host: host, Started: time.Now().UTC()})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("encoding lock holder: %w", err)
	}
	info = append(info, '\n')
	// Write in place, then trim, so a reader never sees an empty file.
	if _, err := f.WriteAt(info, 0); err == nil {
		err = f.Truncate(int64(len(info)))
	}
	if err == nil {
		err = syncFile(f)
	}
	if err != nil {
		funlockFile(f)
		f.Close()
		return nil, fmt.Errorf("writing lock holder into %s: %w", path, err)
	}
	return &runLock{f: f}, nil
}

func describeHolder(f *os.File) string {
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

// release clears the holder note and drops the lock.
func (l *runLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	uerr := funlockFile(l.f)
	cerr := l.f.Close()
	l.f = nil
	if uerr != nil {
		return uerr
	}
	if cerr != nil {
		return fmt.Errorf("closing lock file: %w", cerr)
	}
	return nil
}
