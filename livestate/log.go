package livestate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// The state log follows the rule of the toolkit's append-only logs: a line
// is in the log once its bytes and its newline are written; what follows
// the last newline is an append a crash cut short, kept (and given its
// newline) when it is a whole JSON value, otherwise cut off before the next
// append.

// maxLine bounds one line of the state log.
const maxLine = 16 << 20

// errLocked is the error of a log another process holds.
var errLocked = errors.New("another rewardd holds this state log")

// stateLog is an open state log: appends write whole lines and sync.
type stateLog struct {
	mu     sync.Mutex
	f      fsys.File
	lock   fsys.File
	path   string
	end    int64
	broken error
}

// readLines calls fn with every whole line of r that is not blank, with
// its number from 1; it returns where the last whole line ends and how
// many bytes after it are torn.
func readLines(r io.Reader, fn func(data []byte, no int) error) (end, torn int64, unterminated bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for no := 1; ; no++ {
		line, rerr := br.ReadSlice('\n')
		var long []byte
		for errors.Is(rerr, bufio.ErrBufferFull) {
			long = append(long, line...)
			if len(long) > maxLine {
				return end, 0, false, fmt.Errorf("line %d is longer than %d bytes", no, maxLine)
			}
			line, rerr = br.ReadSlice('\n')
		}
		if long != nil {
			line = append(long, line...)
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return end, 0, false, rerr
		}
		if len(line) == 0 {
			return end, 0, false, nil
		}
		terminated := line[len(line)-1] == '\n'
		data := bytes.TrimRight(line, "\r\n")
		blank := len(bytes.TrimSpace(data)) == 0
		if !terminated && (blank || !json.Valid(data)) {
			return end, int64(len(line)), false, nil
		}
		if !blank {
			if err := fn(data, no); err != nil {
				return end, 0, false, err
			}
		}
		end += int64(len(line))
		if !terminated {
			return end, 0, true, nil
		}
	}
}

// openLog opens (creating) the log at path under an exclusive lock, calls
// fn with each line, cuts a torn tail and ends an unterminated line. torn
// is how many bytes were cut.
func openLog(fs fsys.FS, path string, fn func(data []byte, no int) error) (l *stateLog, torn int64, err error) {
	lock, err := fs.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("opening the state log's lock: %w", err)
	}
	held, err := fs.Lock(lock) // held: another process has it
	if err != nil || held {
		lock.Close()
		if err == nil {
			err = errLocked
		}
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = fs.Unlock(lock)
			lock.Close()
		}
	}()
	_, statErr := fs.Stat(path)
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("opening the state log: %w", err)
	}
	if statErr != nil {
		if err := fsys.SyncDir(fs, filepath.Dir(path)); err != nil {
			f.Close()
			return nil, 0, err
		}
	}
	end, torn, unterminated, err := readLines(f, fn)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("reading the state log %s: %w", path, err)
	}
	if torn > 0 {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("cutting the torn tail of %s: %w", path, err)
		}
	}
	l = &stateLog{f: f, lock: lock, path: path, end: end}
	if unterminated {
		if _, err := l.Append([]byte("\n")); err != nil {
			f.Close()
			return nil, 0, err
		}
	} else if torn > 0 {
		if err := fsys.SyncFile(f); err != nil {
			f.Close()
			return nil, 0, err
		}
	}
	return l, torn, nil
}

// Append writes lines (whole lines, each ending in '\n') at the end and
// syncs. A failed write is cut back off; a failed sync breaks the log.
func (l *stateLog) Append(lines []byte) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return 0, l.broken
	}
	off := l.end
	if _, err := l.f.WriteAt(lines, off); err != nil {
		if terr := l.f.Truncate(off); terr != nil {
			l.broken = fmt.Errorf("writing the state log %s failed (%v) and cutting the write back failed: %w", l.path, err, terr)
			return 0, l.broken
		}
		return 0, fmt.Errorf("writing the state log %s: %w", l.path, err)
	}
	if err := fsys.SyncFile(l.f); err != nil {
		l.broken = fmt.Errorf("syncing the state log %s: %w", l.path, err)
		return 0, l.broken
	}
	l.end += int64(len(lines))
	return off, nil
}

// Close closes the log and lets its lock go.
func (l *stateLog) Close() error {
	err := l.f.Close()
	if l.lock != nil {
		l.lock.Close()
	}
	return err
}
