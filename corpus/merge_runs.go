package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/rubricforge/rubricforge/internal/applog"
	"github.com/rubricforge/rubricforge/internal/fsys"
)

// What a merge of run directories needs of the corpus beyond Append and
// Commit: the failures of a finished run read without its lock, and many
// failures recorded with one sync.

// ReadFailures returns the latest failure of every id in the failures log
// of the run directory dir, in the log's order, without taking its lock. A
// missing log is no failure; bad and torn lines are skipped as a resume
// skips them.
func ReadFailures(dir string) ([]Failure, error) { return ReadFailuresFS(fsys.OS, dir) }

// ReadFailuresFS is ReadFailures on fsy.
func ReadFailuresFS(fsy fsys.FS, dir string) ([]Failure, error) {
	path := Layout{Dir: dir}.Failures()
	var fl failureLog
	tail, err := applog.Read(fsy, path, fl.line(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading failures log: %w", err)
	}
	fl.note(tail)
	latest := make(map[string]int, len(fl.entries))
	for i, e := range fl.entries {
		latest[e.ID] = i
	}
	out := make([]Failure, 0, len(latest))
	for i, e := range fl.entries {
		if latest[e.ID] == i {
			out = append(out, e)
		}
	}
	return out, nil
}

// RecordFailures appends every failure of fs to failures.jsonl in one write
// and one sync: RecordFailure for many lines at once. A kill during it
// leaves whole lines and at most one torn line, which the next Open cuts
// off.
func (r *Run) RecordFailures(fs []Failure) error {
	if len(fs) == 0 {
		return nil
	}
	var buf []byte
	lens := make([]int, len(fs))
	for i := range fs {
		if fs[i].ID == "" {
			return errors.New("recording failures: empty id")
		}
		if fs[i].Time.IsZero() {
			fs[i].Time = time.Now().UTC()
		}
		line, err := encodeFailure(fs[i])
		if err != nil {
			return fmt.Errorf("recording failure of %s: %w", fs[i].ID, err)
		}
		buf = append(buf, line...)
		lens[i] = len(line)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.writable(); err != nil {
		return fmt.Errorf("recording failures: %w", err)
	}
	off, err := r.failLog.Append(buf)
	if err != nil {
		return fmt.Errorf("recording %d failures: %w", len(fs), r.fatal(err))
	}
	for i := range fs {
		r.failures.Set(fs[i].ID, r.failureLine(off, &fs[i]))
		off += int64(lens[i])
	}
	r.failLines += len(fs)
	return nil
}
