package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/internal/applog"
	"github.com/rubricforge/rubricforge/internal/idmap"
)

// Failure is one line of failures.jsonl: a problem that did not make it into
// the corpus at some stage.
type Failure struct {
	ID       string    `json:"id"`
	Stage    string    `json:"stage"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	Time     time.Time `json:"time"`
	Source   string    `json:"source,omitempty"`
	// Transient is set when the endpoint, not the problem, was at fault
	// (retries ran out on 429s, 5xx, timeouts or resets); a plain resume
	// tries such a problem again.
	Transient bool `json:"transient,omitempty"`
	// Rollouts and RolloutsCorrect count the rollouts sampled for a
	// problem that got past the rollout stage before it failed or was
	// left out: with the records' rollouts, what a resume counts the
	// run's sampled rollouts from.
	Rollouts        int64 `json:"rollouts,omitempty"`
	RolloutsCorrect int64 `json:"rollouts_correct,omitempty"`
}

// failureLine is where the latest line of a failed id starts in the
// failures log, and what a resume asks of it.
type failureLine struct {
	off int64
	FailureState
}

// FailureState is what a resume needs of a failure.
type FailureState struct {
	Stage string
	// Transient: the endpoint, not the problem, was at fault.
	Transient bool
}

// failureLine returns f's line at off, its stage name shared with the
// other failures of that stage.
func (r *Run) failureLine(off int64, f *Failure) failureLine {
	stage, ok := r.stages[f.Stage]
	if !ok {
		stage = f.Stage
		r.stages[stage] = stage
	}
	return failureLine{off, FailureState{stage, f.Transient}}
}

// Failed returns the state of id's latest failure when id is not done.
func (r *Run) Failed(id string) (FailureState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.failures.Get(id)
	if !ok || r.done.Has(id) {
		return FailureState{}, false
	}
	return at.FailureState, true
}

// failureLog is the parsed content of a failures log.
type failureLog struct {
	entries []Failure
	offs    []int64 // where each entry's line starts
	// good is where the next line goes: the end of the last whole line.
	good int64
	// torn is set when bytes after good were dropped (a line cut by a crash
	// or a failed write); unterminated is set when the last line was a
	// whole JSON value that lacked its newline.
	torn, unterminated bool
	// bad counts whole lines that are not failure records; firstBad says
	// which was the first and why.
	bad      int
	firstBad string
}

// parseFailureLog reads a failures log by applog's rule for a torn tail.
// A bad line anywhere is skipped and counted, never fatal: the log is a
// report, and one damaged line must not make a run unopenable. Only a read
// error is an error.
func parseFailureLog(name string, r io.Reader) (failureLog, error) {
	var out failureLog
	tail, err := applog.Parse(r, out.line(name))
	if err != nil {
		return failureLog{}, fmt.Errorf("reading %s: %w", name, err)
	}
	out.note(tail)
	return out, nil
}

// line takes one line of the log named name.
func (l *failureLog) line(name string) func(applog.Line) error {
	return func(ln applog.Line) error {
		f, err := parseFailureLine(ln.Data)
		if err != nil {
			l.bad++
			if l.firstBad == "" {
				l.firstBad = fmt.Sprintf("%s line %d: %v", name, ln.No, err)
			}
			return nil
		}
		l.add(f, ln.Off)
		return nil
	}
}

// note records what the reading found at the end of the log.
func (l *failureLog) note(t applog.Tail) {
	l.good, l.torn, l.unterminated = t.End, t.Torn > 0, t.Unterminated
}

func (l *failureLog) add(f Failure, off int64) {
	l.entries = append(l.entries, f)
	l.offs = append(l.offs, off)
}

func parseFailureLine(b []byte) (Failure, error) {
	if len(b) > 0 && b[0] != '{' {
		what := "a JSON value"
		if b[0] == '[' {
			what = "an array"
		}
		return Failure{}, fmt.Errorf("bad failure record: expected an object, found %s", what)
	}
	var f Failure
	if err := json.Unmarshal(b, &f); err != nil {
		return Failure{}, fmt.Errorf("bad failure record: %w", err)
	}
	if f.ID == "" {
		return Failure{}, errors.New("bad failure record: empty id")
	}
	return f, nil
}

// encodeFailure is f as one line, keeping <, > and & readable.
func encodeFailure(f Failure) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// loadFailures opens failures.jsonl (see applog): bad lines are skipped
// with one warning, a torn last line is cut off, and a whole last line
// without its newline gets one, so the next append starts a line of its
// own. A missing log is made by the first failure recorded.
func (r *Run) loadFailures() error {
	path := r.layout.Failures()
	var fl failureLog
	log, tail, err := applog.Open(path, applog.Options{FS: r.fs}, fl.line(path))
	if err != nil {
		return r.fatal(fmt.Errorf("opening failures log: %w", err))
	}
	fl.note(tail)
	r.failLog = log
	for i, e := range fl.entries {
		r.failures.Set(e.ID, r.failureLine(fl.offs[i], &e))
	}
	r.failLines = len(fl.entries) + fl.bad
	if fl.bad > 0 {
		r.log.Warn("skipped bad lines of the failures log; they leave it when the run closes",
			"file", path, "lines", fl.bad, "first", fl.firstBad)
	}
	if fl.torn {
		r.log.Warn("dropped a torn last line of the failures log", "file", path, "offset", fl.good, "bytes", tail.Torn)
	}
	return nil
}

// RecordFailure appends f to failures.jsonl and syncs it. A zero f.Time is
// set to now. The append is all or nothing: a failed write is cut back off,
// so the next line never follows torn bytes. A failed sync is fatal for the
// run (the error wraps ErrNotDurable).
func (r *Run) RecordFailure(f Failure) error {
	if f.ID == "" {
		return errors.New("recording failure: empty id")
	}
	if f.Time.IsZero() {
		f.Time = time.Now().UTC()
	}
	line, err := encodeFailure(f)
	if err != nil {
		return fmt.Errorf("recording failure of %s: %w", f.ID, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.writable(); err != nil {
		return fmt.Errorf("recording failure of %s: %w", f.ID, err)
	}
	off, err := r.failLog.Append(line)
	if err != nil {
		return fmt.Errorf("recording failure of %s: %w", f.ID, r.fatal(err))
	}
	r.failures.Set(f.ID, r.failureLine(off, &f))
	r.failLines++
	return nil
}

// compactFailuresLocked rewrites failures.jsonl with one line per problem
// that is still failed, when it holds lines for problems done since, failed
// again, or bad lines: the log then reads as the run's current failures.
func (r *Run) compactFailuresLocked() error {
	live, err := r.liveFailuresLocked()
	if err != nil {
		return fmt.Errorf("compacting failures log: %w", err)
	}
	if r.failLines == len(live) {
		return nil
	}
	slices.SortFunc(live, func(a, b Failure) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var buf bytes.Buffer
	lines := idmap.New[failureLine]()
	for _, f := range live {
		line, err := encodeFailure(f)
		if err != nil {
			return fmt.Errorf("compacting failures log: %w", err)
		}
		lines.Set(f.ID, r.failureLine(int64(buf.Len()), &f))
		buf.Write(line)
	}
	if err := r.failLog.Rewrite(buf.Bytes()); err != nil {
		return r.fatal(fmt.Errorf("compacting failures log: %w", err))
	}
	r.failures = lines
	r.failLines = len(live)
	return nil
}

// liveFailuresLocked reads back the latest failure of every id that is not
// done from the failures log, in the log's order.
func (r *Run) liveFailuresLocked() ([]Failure, error) {
	if r.failures.Len() == 0 {
		return nil, nil
	}
	path := r.layout.Failures()
	f, err := r.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("reading failures log: %w", err)
	}
	defer func() { _ = f.Close() }()
	fl, err := parseFailureLog(path, io.LimitReader(f, r.failLog.End()))
	if err != nil {
		return nil, err
	}
	var live []Failure
	for i, e := range fl.entries {
		if at, ok := r.failures.Get(e.ID); ok && at.off == fl.offs[i] && !r.done.Has(e.ID) {
			live = append(live, e)
		}
	}
	return live, nil
}
