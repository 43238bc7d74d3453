// Package corpus owns a run directory's durable state: the parquet shards of
// finished records, the manifest that lists them, the run lock, the failures
// log, and the resume scan that rebuilds the set of done problem ids after a
// crash. A shard counts only after the full commit protocol (temp file,
// fsync, reopen and check, rename, fsync the directory, manifest written
// atomically), so a kill at any instant loses at most the buffered records.
package corpus

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/schema"
)

// Options configure a Run.
type Options struct {
	ShardRows    int // records per shard; default 1000
	RowGroupRows int // rows per parquet row group; default 128
	ToolVersion  string
	// Logger receives resume-scan warnings; default slog.Default().
	Logger *slog.Logger
}

// Errors wrapped by Run methods.
var (
	ErrClosed    = errors.New("run is closed")
	ErrDuplicate = errors.New("record id is already done")
)

// Run is an open, locked run directory. Its methods are safe to call from
// several goroutines, but they serialize: Append and Commit are meant for one
// writer goroutine, while Done may be asked from anywhere.
type Run struct {
	dir  string
	opt  Options
	log  *slog.Logger
	wopt []parquet.WriterOption

	mu       sync.Mutex
	lock     *runLock
	man      Manifest
	dirty    bool // the manifest on disk is behind man
	next     int  // next shard index; indexes are never reused
	done     map[string]struct{}
	buf      []schema.Record
	failures map[string]Failure
	// failLines counts the lines of failures.jsonl, superseded ones included.
	failLines int
	failFile  *os.File
	closed    bool
}

// Open locks the run directory dir (creating it if needed) and runs the
// resume scan: listed shards are verified, unlisted ones adopted or moved
// aside, stale temp files removed, and failures.jsonl loaded. When another
// process holds the directory the error wraps ErrLocked.
func Open(dir string, opt Options) (*Run, error) {
	if opt.ShardRows <= 0 {
		opt.ShardRows = 1000
	}
	if opt.RowGroupRows <= 0 {
		opt.RowGroupRows = 128
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Join(dir, shardsDir), 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	lk, err := acquireLock(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{
		dir:      dir,
		opt:      opt,
		log:      opt.Logger.With("run", dir),
		wopt:     writerOptions(opt),
		lock:     lk,
		done:     make(map[string]struct{}),
		failures: make(map[string]Failure),
	}
	if err := r.resume(); err != nil {
		lk.release()
		return nil, fmt.Errorf("resuming run %s: %w", dir, err)
	}
	return r, nil
}

// resume rebuilds the run state from disk.
func (r *Run) resume() error {
	man, err := ReadManifest(r.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		man = Manifest{SpecVersion: schema.SpecVersion}
		r.dirty = true
	case err != nil:
		return err
	case man.SpecVersion != schema.SpecVersion:
		return fmt.Errorf("manifest %s has spec version %q; this tool writes %q",
			filepath.Join(r.dir, ManifestName), man.SpecVersion, schema.SpecVersion)
	}
	changed := false
	sdir := filepath.Join(r.dir, shardsDir)
	listed := make(map[string]bool, len(man.Shards))

	for i := range man.Shards {
		s := &man.Shards[i]
		_, name := filepath.Split(s.File)
		listed[name] = true
		idx, _ := shardIndex(name)
		r.next = max(r.next, idx+1)
		ids, relisted, err := r.verifyListed(s)
		if err != nil {
			return err
		}
		changed = changed || relisted
		r.addDone(ids, s.File)
	}

	entries, err := os.ReadDir(sdir)
	if err != nil {
		return fmt.Errorf("listing shards: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".part-") && strings.HasSuffix(name, ".tmp") {
			if err := os.Remove(filepath.Join(sdir, name)); err != nil {
				return fmt.Errorf("removing stale temp shard: %w", err)
			}
			r.log.Info("removed an unfinished shard left by an earlier run", "file", name)
			continue
		}
		idx, ok := shardIndex(name)
		if !ok || listed[name] || !e.Type().IsRegular() {
			continue
		}
		r.next = max(r.next, idx+1)
		path := filepath.Join(sdir, name)
		info, ids, err := inspectShard(path)
		if err != nil {
			if err := r.moveAside(name, err); err != nil {
				return err
			}
			continue
		}
		info.File = shardRelPath(idx)
		man.Shards = append(man.Shards, info)
		r.addDone(ids, info.File)
		changed = true
		r.log.Warn("adopted a committed shard missing from the manifest", "file", info.File, "rows", info.Rows)
	}
	if err := r.scanBroken(); err != nil {
		return err
	}

	slices.SortFunc(man.Shards, func(a, b ShardInfo) int {
		ia, _ := shardIndex(filepath.Base(a.File))
		ib, _ := shardIndex(filepath.Base(b.File))
		return cmp.Compare(ia, ib)
	})
	man.Rows = 0
	for _, s := range man.Shards {
		man.Rows += s.Rows
	}
	r.man = man
	if changed {
		r.dirty = true
		if err := r.writeManifest(); err != nil {
			return err
		}
	}
	return r.loadFailures()
}

// verifyListed checks a listed shard by size and hash. A shard that differs
// is kept only if it still reads as the same rows; then s is updated.
func (r *Run) verifyListed(s *ShardInfo) (ids []string, relisted bool, err error) {
	path := filepath.Join(r.dir, filepath.FromSlash(s.File))
	if _, err := os.Stat(path); err != nil {
		return nil, false, fmt.Errorf("listed shard %s is missing (its %d rows would be lost; restore it, or remove it from %s to recompute them): %w",
			s.File, s.Rows, ManifestName, err)
	}
	info, ids, ierr := inspectShard(path)
	if ierr == nil && info.Bytes == s.Bytes && info.XXHash64 == s.XXHash64 {
		if info.Rows != s.Rows || info.FirstID != s.FirstID || info.LastID != s.LastID {
			return nil, false, fmt.Errorf("listed shard %s matches its hash but not its manifest entry (rows %d, ids %s..%s)",
				s.File, info.Rows, info.FirstID, info.LastID)
		}
		return ids, false, nil
	}
	if ierr == nil && info.Rows == s.Rows && info.FirstID == s.FirstID && info.LastID == s.LastID {
		r.log.Warn("listed shard changed on disk but still reads as the same rows; re-listing it",
			"file", s.File, "bytes", info.Bytes, "want_bytes", s.Bytes, "xxhash64", info.XXHash64, "want_xxhash64", s.XXHash64)
		info.File = s.File
		*s = info
		return ids, true, nil
	}
	var why string
	if ierr != nil {
		why = ierr.Error()
	} else {
		why = fmt.Sprintf("it holds %d rows %s..%s, the manifest says %d rows %s..%s",
			info.Rows, info.FirstID, info.LastID, s.Rows, s.FirstID, s.LastID)
	}
	return nil, false, fmt.Errorf("listed shard %s does not match the manifest (bytes %d, xxhash64 %s expected) and cannot be re-verified: %s; "+
		"move it away and remove it from %s to recompute its %d rows", s.File, s.Bytes, s.XXHash64, why, ManifestName, s.Rows)
}

func (r *Run) addDone(ids []string, file string) {
	for _, id := range ids {
		if _, dup := r.done[id]; dup {
			r.log.Warn("id appears in more than one shard", "id", id, "file", file)
		}
		r.done[id] = struct{}{}
	}
}

// moveAside moves an unusable unlisted shard into shards/broken/.
func (r *Run) moveAside(name string, why error) error {
	bdir := filepath.Join(r.dir, shardsDir, brokenDir)
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return fmt.Errorf("moving broken shard aside: %w", err)
	}
	dst := filepath.Join(bdir, name)
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = filepath.Join(bdir, fmt.Sprintf("%s.%d", name, i))
	}
	if err := os.Rename(filepath.Join(r.dir, shardsDir, name), dst); err != nil {
		return fmt.Errorf("moving broken shard aside: %w", err)
	}
	if err := syncDir(filepath.Join(r.dir, shardsDir)); err != nil {
		return err
	}
	r.log.Warn("moved an unreadable unlisted shard aside; its rows will be recomputed",
		"file", filepath.Join(shardsDir, name), "to", dst, "reason", why.Error())
	return nil
}

// scanBroken keeps indexes of shards moved aside from being reused.
func (r *Run) scanBroken() error {
	entries, err := os.ReadDir(filepath.Join(r.dir, shardsDir, brokenDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing broken shards: %w", err)
	}
	for _, e := range entries {
		name, _, _ := strings.Cut(e.Name(), ".parquet")
		if idx, ok := shardIndex(name + ".parquet"); ok {
			r.next = max(r.next, idx+1)
		}
	}
	return nil
}

// loadFailures reads failures.jsonl, dropping a torn last line from a crash
// and terminating a complete last line that lacks its newline.
func (r *Run) loadFailures() error {
	path := filepath.Join(r.dir, FailuresName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening failures log: %w", err)
	}
	defer f.Close()
	fl, err := parseFailureLog(path, f)
	if err != nil {
		return err
	}
	for _, e := range fl.entries {
		r.failures[e.ID] = e
	}
	r.failLines = len(fl.entries)
	switch {
	case fl.torn:
		r.log.Warn("dropped a torn last line of the failures log", "file", path, "offset", fl.good)
		err = f.Truncate(fl.good)
	case fl.unterminated:
		_, err = f.WriteAt([]byte("\n"), fl.good)
	default:
		return nil
	}
	if err == nil {
		err = syncFile(f)
	}
	if err != nil {
		return fmt.Errorf("repairing the end of %s: %w", path, err)
	}
	return nil
}

// Dir returns the run directory.
func (r *Run) Dir() string { return r.dir }

// Done reports whether id is in a committed shard or was appended in this
// process. The pipeline uses it to never process an id twice.
func (r *Run) Done(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.done[id]
	return ok
}

// DoneCount is the number of distinct done ids, buffered ones included.
func (r *Run) DoneCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done)
}

// Buffered is the number of appended records not yet in a shard.
func (r *Run) Buffered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf)
}

// Failures returns the latest failure of every id that is not done.
func (r *Run) Failures() map[string]Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Failure, len(r.failures))
	for id, f := range r.failures {
		if _, ok := r.done[id]; !ok {
			out[id] = f
		}
	}
	return out
}

// Manifest returns a copy of the manifest as last committed.
func (r *Run) Manifest() Manifest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.man.clone()
}

// SetFingerprint records the job fingerprint; it reaches disk with the next
// manifest write, which the next Commit does even with nothing buffered.
func (r *Run) SetFingerprint(fp string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.man.JobFingerprint != fp {
		r.man.JobFingerprint = fp
		r.dirty = true
	}
}

// Append buffers rec. Done(rec.ID) is true as soon as Append returns, but
// the record is durable only after the shard holding it is committed, which
// happens by itself every ShardRows records, or on Commit and Close. The
// caller must not modify rec's slices or pointed-to values afterwards.
// Provenance.CreatedAt is stored in UTC at millisecond precision, and must
// lie in 1678..2262 (the zero time cannot be stored). If the automatic
// commit fails, the record stays buffered, the error is returned, and the
// next Append, Commit or Close retries.
func (r *Run) Append(rec *schema.Record) error {
	if rec == nil {
		return errors.New("appending record: nil record")
	}
	if err := checkRecord(rec); err != nil {
		return fmt.Errorf("appending record %q: %w", rec.ID, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("appending record %q: %w", rec.ID, ErrClosed)
	}
	if _, ok := r.done[rec.ID]; ok {
		return fmt.Errorf("appending record %q: %w", rec.ID, ErrDuplicate)
	}
	r.done[rec.ID] = struct{}{}
	r.buf = append(r.buf, *rec)
	last := &r.buf[len(r.buf)-1]
	last.Provenance.CreatedAt = last.Provenance.CreatedAt.UTC().Truncate(time.Millisecond)
	if len(r.buf) >= r.opt.ShardRows {
		return r.commitLocked()
	}
	return nil
}

// storableTime reports whether the parquet writer, which converts times
// through int64 nanoseconds, can store t.
func storableTime(t time.Time) bool {
	return !t.Before(time.Unix(0, math.MinInt64).Add(time.Millisecond)) &&
		!t.After(time.Unix(0, math.MaxInt64).Add(-time.Millisecond))
}

// checkRecord rejects what readers such as pyarrow would choke on later.
func checkRecord(rec *schema.Record) error {
	if rec.ID == "" {
		return errors.New("empty id")
	}
	if t := rec.Provenance.CreatedAt; !storableTime(t) {
		return fmt.Errorf("provenance.created_at %v is outside what a parquet timestamp holds (unset?)", t)
	}
	bad := ""
	check := func(field, s string) {
		if bad == "" && !utf8.ValidString(s) {
			bad = field
		}
	}
	check("id", rec.ID)
	check("source", rec.Source)
	check("split", rec.Split)
	check("problem", rec.Problem)
	check("answer", rec.Answer)
	if rec.Reference != nil {
		check("reference", *rec.Reference)
	}
	check("style", rec.Style)
	for _, it := range rec.Rubric {
		check("rubric.type", it.Type)
		check("rubric.text", it.Text)
		if it.ValidReason != nil {
			check("rubric.valid_reason", *it.ValidReason)
		}
	}
	for _, ro := range rec.Rollouts {
		check("rollouts.text", ro.Text)
		check("rollouts.extracted_answer", ro.ExtractedAnswer)
		check("rollouts.finish_reason", ro.FinishReason)
	}
	p := rec.Provenance
	for _, s := range []string{p.RolloutModel, p.DistillModel, p.RolloutTemplate, p.DistillTemplate, p.JobFingerprint, p.SpecVersion, p.ToolVersion} {
		check("provenance", s)
	}
	for _, s := range []*string{p.JudgeModel, p.EmpiricalModel, p.JudgeTemplate, p.SatisfyTemplate} {
		if s != nil {
			check("provenance", *s)
		}
	}
	if bad != "" {
		return fmt.Errorf("field %s is not valid UTF-8", bad)
	}
	return nil
}

// Commit writes the buffered records (if any) as a new shard and lists it in
// the manifest. With nothing buffered it still writes the manifest when it
// is behind (a new fingerprint, a fresh run, an earlier failed write).
func (r *Run) Commit() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("committing: %w", ErrClosed)
	}
	return r.commitLocked()
}

func (r *Run) commitLocked() error {
	if len(r.buf) == 0 {
		if r.dirty {
			return r.writeManifest()
		}
		return nil
	}
	slices.SortFunc(r.buf, func(a, b schema.Record) int { return strings.Compare(a.ID, b.ID) })
	idx := r.next
	info, renamed, err := writeShard(r.dir, idx, r.buf, r.wopt)
	if !renamed {
		return fmt.Errorf("committing %d records: %w", len(r.buf), err)
	}
	// Once renamed, the shard may survive a crash, so it is listed even if
	// syncing the directory failed.
	r.next++
	r.man.Shards = append(r.man.Shards, info)
	r.man.Rows += info.Rows
	n := len(r.buf)
	clear(r.buf)
	r.buf = r.buf[:0]
	r.dirty = true
	if err != nil {
		return fmt.Errorf("committing %d records: %w", n, err)
	}
	return r.writeManifest()
}

func (r *Run) writeManifest() error {
	m := r.man.clone()
	if m.Shards == nil {
		m.Shards = []ShardInfo{}
	}
	m.SpecVersion = schema.SpecVersion
	m.ToolVersion = r.opt.ToolVersion
	m.UpdatedAt = time.Now().UTC()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	data = append(data, '\n')
	if err := WriteFileAtomic(filepath.Join(r.dir, ManifestName), data, 0o644); err != nil {
		return fmt.Errorf("writing manifest: %w", err)
	}
	r.man = m
	r.dirty = false
	return nil
}

// RecordFailure appends f to failures.jsonl and fsyncs it. A zero f.Time is
// set to now.
func (r *Run) RecordFailure(f Failure) error {
	if f.ID == "" {
		return errors.New("recording failure: empty id")
	}
	if f.Time.IsZero() {
		f.Time = time.Now().UTC()
	}
	line, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("recording failure of %s: %w", f.ID, err)
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("recording failure of %s: %w", f.ID, ErrClosed)
	}
	if r.failFile == nil {
		path := filepath.Join(r.dir, FailuresName)
		_, statErr := os.Stat(path)
		ff, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("opening failures log: %w", err)
		}
		if errors.Is(statErr, fs.ErrNotExist) {
			if err := syncDir(r.dir); err != nil {
				ff.Close()
				return err
			}
		}
		r.failFile = ff
	}
	if _, err := r.failFile.Write(line); err != nil {
		return fmt.Errorf("recording failure of %s: %w", f.ID, err)
	}
	if err := syncFile(r.failFile); err != nil {
		return fmt.Errorf("recording failure of %s: syncing: %w", f.ID, err)
	}
	r.failures[f.ID] = f
	r.failLines++
	return nil
}

// compactFailuresLocked rewrites failures.jsonl with one line per problem
// that is still failed, when it holds lines for problems done since or
// failed again: the log then reads as the run's current failures.
func (r *Run) compactFailuresLocked() error {
	live := make([]Failure, 0, len(r.failures))
	for id, f := range r.failures {
		if _, done := r.done[id]; !done {
			live = append(live, f)
		}
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
	for _, f := range live {
		line, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("compacting failures log: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if r.failFile != nil {
		r.failFile.Close()
		r.failFile = nil
	}
	if err := WriteFileAtomic(filepath.Join(r.dir, FailuresName), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("compacting failures log: %w", err)
	}
	r.failLines = len(live)
	return nil
}

// Close commits what is buffered, then releases the lock. It removes no
// files. The lock is released even when the commit fails.
func (r *Run) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.commitLocked()
	if err == nil {
		err = r.compactFailuresLocked()
	}
	if r.failFile != nil {
		if cerr := r.failFile.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing failures log: %w", cerr)
		}
		r.failFile = nil
	}
	if lerr := r.lock.release(); lerr != nil && err == nil {
		err = lerr
	}
	return err
}
