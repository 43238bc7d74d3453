// Package applog owns the toolkit's append-only logs: files of one JSON
// value a line that only grow (a run's failures log, a reviewer's decision
// log, the batch journal), written through the fsys door so that the crash
// file system tests them.
//
// One rule for every log. A line is in the log once its bytes and its
// newline are written. What follows the last newline is an append cut
// short (a kill mid-write, a power loss before the sync): when it is a
// whole JSON value it is kept and given its newline; otherwise it is torn,
// and the writer (Open) cuts it off and says so (Tail.Torn). Either way
// the next line starts a line of its own, never glued to what a crash
// left. Readers that must not change the file (Read: status, list) skip a
// torn tail.
//
// Append writes whole lines at the end and syncs the file before it
// returns. A failed write is cut back off, so no later line follows torn
// bytes; a failed sync breaks the log (every later Append fails, wrapping
// fsys.ErrNotDurable), because after a failed fsync the kernel may have
// dropped the pages and what the file holds is no longer known. A log is
// created by its first Append (or by Open with Options.Create), which
// syncs its directory, so the new file survives a crash. Rewrite replaces
// a log's content atomically (a compaction).
package applog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// MaxLine bounds one line of a log: a longer one is an error naming it,
// not a reason to read the whole file into memory.
const MaxLine = 64 << 20

// Line is one whole line of a log.
type Line struct {
	// Data is the line without its newline (and without a carriage return
	// before it). It is valid only during the call it is passed to.
	Data []byte
	// Off is where the line starts in the file; No counts lines from 1,
	// blank ones included.
	Off int64
	No  int
}

// Tail is what reading a log found at its end.
type Tail struct {
	// End is where the next line goes: the end of the last whole line.
	End int64
	// Lines counts the whole lines that are not blank.
	Lines int
	// Torn is how many bytes after End are not a whole line (an append a
	// crash cut short); Open cuts them off.
	Torn int64
	// Unterminated is set when the last line is a whole JSON value that
	// lacks its newline; Open gives it one.
	Unterminated bool
}

// Parse reads a log's lines from r, calling fn with each whole line that
// is not blank, in order. An error from fn stops the reading and is
// returned as it is.
func Parse(r io.Reader, fn func(Line) error) (Tail, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var t Tail
	var buf []byte
	for no := 1; ; no++ {
		line, err := readLine(br, &buf)
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, errLong) {
				return t, fmt.Errorf("line %d is longer than %d bytes: %w", no, MaxLine, err)
			}
			return t, err
		}
		if len(line) == 0 { // io.EOF at a line's start
			return t, nil
		}
		terminated := line[len(line)-1] == '\n'
		data := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		blank := len(bytes.TrimSpace(data)) == 0
		if !terminated && (blank || !json.Valid(data)) {
			t.Torn = int64(len(line))
			return t, nil
		}
		if !blank {
			if err := fn(Line{Data: data, Off: t.End, No: no}); err != nil {
				return t, err
			}
			t.Lines++
		}
		t.End += int64(len(line))
		if !terminated {
			t.Unterminated = true
			return t, nil
		}
	}
}

var errLong = errors.New("line too long")

// readLine returns the next line with its newline, or what is left
// before the end of the input without one, in *buf's storage.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if len(*buf)+len(chunk) > MaxLine {
			return nil, errLong
		}
		*buf = append(*buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return *buf, err
	}
}

// Read reads the log at path without changing it, as Parse does. A missing
// log is an error wrapping fs.ErrNotExist.
func Read(fsy fsys.FS, path string, fn func(Line) error) (Tail, error) {
	if fsy == nil {
		fsy = fsys.OS
	}
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return Tail{}, err
	}
	defer func() { _ = f.Close() }()
	t, err := Parse(f, fn)
	if err != nil {
		return t, fmt.Errorf("reading %s: %w", path, err)
	}
	return t, nil
}

// Options configure Open.
type Options struct {
	// FS is the file system; default fsys.OS.
	FS fsys.FS
	// Perm is the mode of a new log; default 0644.
	Perm fs.FileMode
	// Create makes a missing log at Open instead of at the first Append.
	Create bool
	// Lock takes an exclusive lock on the log (it implies Create): a
	// second Open of it with Lock fails with ErrLocked until Close. A
	// locked log cannot be rewritten.
	Lock bool
}

// ErrLocked is wrapped when another holder has a log's lock.
var ErrLocked = errors.New("the log is locked by another writer")

// ErrBroken is wrapped by every Append after a failed sync.
var ErrBroken = errors.New("an earlier write to the log failed")

// Log is a log open for appending. Its methods are safe for concurrent
// use.
type Log struct {
	fs   fsys.FS
	path string
	perm fs.FileMode
	lock bool

	mu  sync.Mutex
	f   fsys.File // nil until the file exists
	end int64
	// cut is set when a failed write could not be cut back off: the next
	// Append cuts it first.
	cut bool
	// broken is the failed sync after which nothing more is appended.
	broken error
	closed bool
}

// Open opens the log at path for appending. It reads the log as Read
// does, calling fn with each whole line (fn may be nil; its error stops
// the reading and is returned as it is), then cuts a torn
// tail off and gives an unterminated last line its newline, syncing the
// file; Tail says what it found. A missing log has no lines; it is
// created by the first Append, or now with Options.Create. The directory
// must exist.
func Open(path string, opt Options, fn func(Line) error) (*Log, Tail, error) {
	if opt.FS == nil {
		opt.FS = fsys.OS
	}
	if opt.Perm == 0 {
		opt.Perm = 0o644
	}
	l := &Log{fs: opt.FS, path: path, perm: opt.Perm, lock: opt.Lock}
	f, err := l.fs.OpenFile(path, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist) && (opt.Create || opt.Lock):
		f, err = l.create()
	case errors.Is(err, fs.ErrNotExist):
		return l, Tail{}, nil
	}
	if err != nil {
		return nil, Tail{}, fmt.Errorf("opening %s: %w", path, err)
	}
	if opt.Lock {
		held, err := l.fs.Lock(f)
		if err == nil && held {
			err = ErrLocked
		}
		if err != nil {
			_ = f.Close()
			return nil, Tail{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	var fnErr error
	t, err := Parse(io.NewSectionReader(f, 0, 1<<62), func(ln Line) error {
		if fn == nil {
			return nil
		}
		fnErr = fn(ln)
		return fnErr
	})
	if err == nil {
		err = repair(f, t)
	}
	if err != nil {
		l.f = f
		_ = l.Close()
		if fnErr != nil {
			return nil, t, fnErr
		}
		return nil, t, fmt.Errorf("%s: %w", path, err)
	}
	if t.Unterminated {
		t.End++
	}
	l.f, l.end = f, t.End
	return l, t, nil
}

// repair cuts a torn tail off, or ends an unterminated last line, and
// syncs.
func repair(f fsys.File, t Tail) error {
	var err error
	switch {
	case t.Torn > 0:
		if err = f.Truncate(t.End); err != nil {
			err = fmt.Errorf("cutting off a torn last line: %w", err)
		}
	case t.Unterminated:
		if _, err = f.WriteAt([]byte("\n"), t.End); err != nil {
			err = fmt.Errorf("ending the last line: %w", err)
		}
	default:
		return nil
	}
	if err == nil {
		err = fsys.SyncFile(f)
	}
	return err
}

// create makes the log's file and syncs its directory.
func (l *Log) create() (fsys.File, error) {
	f, err := l.fs.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, l.perm)
	if errors.Is(err, fs.ErrExist) { // made meanwhile by another opener
		return l.fs.OpenFile(l.path, os.O_RDWR, 0)
	}
	if err != nil {
		return nil, err
	}
	if err := fsys.SyncDir(l.fs, dirOf(l.path)); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func dirOf(path string) string {
	if d := filepath.Dir(path); d != "" {
		return d
	}
	return "."
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// End is the log's size: where the next line goes.
func (l *Log) End() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// Exists reports whether the log's file exists (it was there at Open, or
// an Append made it).
func (l *Log) Exists() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f != nil
}

// Append writes lines (one or more, each ending in a newline) at the end
// of the log and syncs it; it returns where they start. A failed write
// leaves the log as it was; a failed sync breaks the log (the error, and
// every later one, wraps fsys.ErrNotDurable and ErrBroken).
func (l *Log) Append(lines []byte) (int64, error) {
	if len(lines) == 0 || lines[len(lines)-1] != '\n' {
		return 0, fmt.Errorf("appending to %s: a log takes whole lines, ending in a newline", l.path)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return 0, err
	}
	if l.f == nil {
		f, err := l.create()
		if err != nil {
			return 0, fmt.Errorf("creating %s: %w", l.path, err)
		}
		l.f = f
	}
	if l.cut {
		if err := l.f.Truncate(l.end); err != nil {
			return 0, fmt.Errorf("cutting a failed append off %s: %w", l.path, err)
		}
		l.cut = false
	}
	off := l.end
	if _, err := l.f.WriteAt(lines, off); err != nil {
		if terr := l.f.Truncate(off); terr != nil {
			l.cut = true
		}
		return 0, fmt.Errorf("appending to %s: %w", l.path, err)
	}
	if err := fsys.SyncFile(l.f); err != nil {
		l.broken = err
		return 0, fmt.Errorf("appending to %s: %w: %w", l.path, ErrBroken, err)
	}
	l.end += int64(len(lines))
	return off, nil
}

// AppendJSON appends v as one line (see Encode).
func (l *Log) AppendJSON(v any) (int64, error) {
	b, err := Encode(v)
	if err != nil {
		return 0, fmt.Errorf("appending to %s: %w", l.path, err)
	}
	return l.Append(b)
}

// Encode is v as one line of a log: JSON that keeps <, > and & as they
// are, and a newline.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (l *Log) writable() error {
	switch {
	case l.closed:
		return fmt.Errorf("%s: the log is closed", l.path)
	case l.broken != nil:
		return fmt.Errorf("%s takes no more lines: %w: %w", l.path, ErrBroken, l.broken)
	}
	return nil
}

// Rewrite replaces the log's content with data (whole lines) atomically,
// as fsys.WriteFileAtomic does: a crash leaves the old log or the new one.
// Appends then go after data. A failed sync breaks the log.
func (l *Log) Rewrite(data []byte) error {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return fmt.Errorf("rewriting %s: a log takes whole lines, ending in a newline", l.path)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lock {
		return fmt.Errorf("rewriting %s: a locked log cannot be rewritten (the lock is on the file it replaces)", l.path)
	}
	if err := l.writable(); err != nil {
		return err
	}
	if err := fsys.WriteFileAtomic(l.fs, l.path, data, l.perm); err != nil {
		if errors.Is(err, fsys.ErrNotDurable) {
			l.broken = err
		}
		return fmt.Errorf("rewriting %s: %w", l.path, err)
	}
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
	f, err := l.fs.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("reopening %s: %w", l.path, err)
	}
	l.f, l.end, l.cut = f, int64(len(data)), false
	return nil
}

// Close closes the log (and drops its lock), first cutting off a failed
// write that could not be cut at once. Later Appends fail.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.f == nil {
		return nil
	}
	var err error
	if l.cut && l.broken == nil {
		if err = l.f.Truncate(l.end); err == nil {
			err = fsys.SyncFile(l.f)
		}
		if err != nil {
			err = fmt.Errorf("cutting a failed append off %s: %w", l.path, err)
		}
	}
	if l.lock {
		_ = l.fs.Unlock(l.f)
	}
	err = errors.Join(err, l.f.Close())
	l.f = nil
	return err
}
