// Package corpus owns a run directory's durable state: the parquet shards of
// finished records with their id lists, the manifest that lists them and the
// history of the jobs that made them, the run lock, the failures log, and
// the resume scan that rebuilds the set of done problem ids after a crash,
// and plan.json, the document distill plan leaves beside report.json.
// A shard counts only after the full commit protocol (temp file, fsync,
// reopen and check, id list, rename, fsync the directory, manifest written
// atomically), so a kill at any instant loses at most the buffered records.
// Every file operation goes through an fsys.FS, so tests can crash the run
// at any operation and check what survives.
package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/applog"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/idmap"
	"github.com/rubricforge/rubricforge/schema"
)

// Options configure a Run.
type Options struct {
	ShardRows    int // records per shard; default 1000
	RowGroupRows int // rows per parquet row group; default 128
	ToolVersion  string
	// Logger receives resume-scan warnings; default slog.Default().
	Logger *slog.Logger
	// FS is the file system of the run directory; default fsys.OS.
	FS fsys.FS
}

// Errors wrapped by Run methods.
var (
	ErrClosed    = errors.New("run is closed")
	ErrDuplicate = errors.New("record id is already done")
	// ErrNotDurable is wrapped when an fsync of a shard, the manifest or the
	// failures log failed. Such a failure is fatal: what was written may not
	// be on disk, so the Run refuses every later write. Everything committed
	// before it is kept.
	ErrNotDurable = fsys.ErrNotDurable
)

// Run is an open, locked run directory. Its methods are safe to call from
// several goroutines, but they serialize: Append and Commit are meant for one
// writer goroutine, while Done may be asked from anywhere.
type Run struct {
	dir    string
	layout Layout
	fs     fsys.FS
	opt    Options
	log    *slog.Logger
	wopt   []parquet.WriterOption

	// What Open created, for Abandon.
	createdDir, createdShards, createdLock bool

	mu     sync.Mutex
	lock   *runLock
	man    Manifest
	dirty  bool // the manifest on disk is behind man
	onDisk bool // a manifest exists on disk
	next   int  // next shard index; indexes are never reused
	done   idmap.Map[struct{}]
	buf    []schema.Record
	// broken is set by a failed fsync; every later write returns it.
	broken error
	// failures locates the latest line of each failed id in
	// failures.jsonl; the records themselves stay on disk.
	failures idmap.Map[failureLine]
	stages   map[string]string // the stage names of failures, shared
	// failLines counts the lines of failures.jsonl, superseded and bad ones
	// included; failLog appends to it (nil until the resume scan opens it).
	failLines int
	failLog   *applog.Log
	closed    bool
}

// Open locks the run directory dir (creating it if needed, durably) and runs
// the resume scan: listed shards are checked against their manifest entries
// (size and modification time, then their id lists; a shard that differs is
// hashed in full), unlisted ones adopted, removed when a finished compaction
// left them, or moved aside, stale temp files removed, and failures.jsonl
// loaded. Open writes no manifest into a new directory: the first Commit
// does. When another process holds the directory the error wraps ErrLocked.
func Open(dir string, opt Options) (*Run, error) {
	r, err := newRun(dir, opt)
	if err != nil {
		return nil, err
	}
	r.lock, r.createdLock, err = acquireLock(r.fs, r.layout)
	if err != nil {
		return nil, err
	}
	if err := r.resume(); err != nil {
		_ = r.lock.release() // the resume's error is the one that matters
		return nil, fmt.Errorf("resuming run %s: %w", dir, err)
	}
	return r, nil
}

// newRun fills in the defaults of opt and creates dir and its shards
// directory (durably) if needed; the Run holds no lock yet.
func newRun(dir string, opt Options) (*Run, error) {
	if opt.ShardRows <= 0 {
		opt.ShardRows = 1000
	}
	if opt.RowGroupRows <= 0 {
		opt.RowGroupRows = 128
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.FS == nil {
		opt.FS = fsys.OS
	}
	r := &Run{
		dir:      dir,
		layout:   Layout{Dir: dir},
		fs:       opt.FS,
		opt:      opt,
		log:      opt.Logger.With("run", dir),
		wopt:     writerOptions(opt),
		done:     idmap.New[struct{}](),
		failures: idmap.New[failureLine](),
		stages:   map[string]string{},
	}
	_, err := r.fs.Stat(dir)
	r.createdDir = errors.Is(err, fs.ErrNotExist)
	_, err = r.fs.Stat(r.layout.Shards())
	r.createdShards = errors.Is(err, fs.ErrNotExist)
	if err := fsys.MkdirAllSynced(r.fs, r.layout.Shards(), 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	return r, nil
}

// fatal turns a failed sync into the run's permanent error; other errors
// pass through.
func (r *Run) fatal(err error) error {
	if err == nil || !errors.Is(err, ErrNotDurable) {
		return err
	}
	if r.broken == nil {
		r.broken = fmt.Errorf("run %s stopped writing after a failed fsync (what was committed before is kept; resume once the disk is healthy): %w", r.dir, err)
		r.log.Error("fsync failed; the run writes nothing more", "err", err)
	}
	return r.broken
}

// writable is nil when the Run may write.
func (r *Run) writable() error {
	if r.closed {
		return ErrClosed
	}
	return r.broken
}

// Layout returns the paths of the run directory's files.
func (r *Run) Layout() Layout { return r.layout }

// Dir returns the run directory.
func (r *Run) Dir() string { return r.dir }

// Done reports whether id is in a committed shard or was appended in this
// process. The pipeline uses it to never process an id twice.
func (r *Run) Done(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done.Has(id)
}

// DoneCount is the number of distinct done ids, buffered ones included.
func (r *Run) DoneCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done.Len()
}

// Buffered is the number of appended records not yet in a shard.
func (r *Run) Buffered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf)
}

// Failures returns the latest failure of every id that is not done, read
// back from failures.jsonl. A failure to read it is logged, and what was
// read returned.
func (r *Run) Failures() map[string]Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	live, err := r.liveFailuresLocked()
	if err != nil {
		r.log.Warn("could not read back the failures log", "error", err)
	}
	out := make(map[string]Failure, len(live))
	for _, f := range live {
		out[f.ID] = f
	}
	return out
}

// Manifest returns a copy of the manifest as last committed.
func (r *Run) Manifest() Manifest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.man.clone()
}

// SetFingerprint records the job fingerprint: SetJob without settings.
func (r *Run) SetFingerprint(fp string) { r.SetJob(fp, nil) }

// SetJob makes fingerprint the run's current job and records it in the
// manifest's job history with its settings (name -> value, as the pipeline
// shows them; nil keeps what an earlier session recorded), first and last
// seen. Records committed from now on count for it unless they carry
// another fingerprint. It reaches disk with the next manifest write, which
// the next Commit does even with nothing buffered.
func (r *Run) SetJob(fingerprint string, settings map[string]string) {
	if fingerprint == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().UTC()
	r.man.JobFingerprint = fingerprint
	j := r.man.job(fingerprint, now)
	j.LastSeen = now
	if settings != nil {
		j.Settings = maps.Clone(settings)
	}
	r.dirty = true
}

// SetInputs records in the manifest what this session read (written with
// the next commit).
func (r *Run) SetInputs(in []InputFile) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.man.Inputs = slices.Clone(in)
	r.dirty = true
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
	if err := r.writable(); err != nil {
		return fmt.Errorf("appending record %q: %w", rec.ID, err)
	}
	if r.done.Has(rec.ID) {
		return fmt.Errorf("appending record %q: %w", rec.ID, ErrDuplicate)
	}
	r.done.Set(rec.ID, struct{}{})
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
// is behind (a new job, a new run directory, an earlier failed write). A
// failed fsync is fatal: the error wraps ErrNotDurable and the Run refuses
// every later write.
func (r *Run) Commit() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.writable(); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	return r.commitLocked()
}

func (r *Run) commitLocked() error {
	if len(r.buf) == 0 {
		if r.dirty || !r.onDisk {
			return r.writeManifest()
		}
		return nil
	}
	slices.SortFunc(r.buf, func(a, b schema.Record) int { return strings.Compare(a.ID, b.ID) })
	info, renamed, err := writeShard(r.fs, r.dir, r.next, r.buf, r.wopt)
	if !renamed {
		return r.fatal(fmt.Errorf("committing %d records: %w", len(r.buf), err))
	}
	// Once renamed, the shard may survive a crash, so it is listed even if
	// syncing the directory failed.
	r.next++
	r.man.Shards = append(r.man.Shards, info)
	r.man.Rows += info.Rows
	r.man.countRecords(fingerprints(r.buf), time.Now().UTC())
	n := len(r.buf)
	clear(r.buf)
	r.buf = r.buf[:0]
	r.dirty = true
	if err != nil {
		return r.fatal(fmt.Errorf("committing %d records: %w", n, err))
	}
	return r.writeManifest()
}

// fingerprints counts records by their job fingerprint.
func fingerprints(recs []schema.Record) map[string]int64 {
	out := map[string]int64{}
	for i := range recs {
		out[recs[i].Provenance.JobFingerprint]++
	}
	return out
}

// Close commits what is buffered, then releases the lock. It removes no
// files, and writes no manifest into a directory where nothing was ever
// committed (see Abandon). The lock is released even when the commit fails.
func (r *Run) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.broken
	if err == nil && (len(r.buf) > 0 || (r.onDisk && r.dirty)) {
		err = r.commitLocked()
	}
	if err == nil {
		err = r.compactFailuresLocked()
	}
	if r.failLog != nil {
		if cerr := r.failLog.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing failures log: %w", cerr)
		}
	}
	if lerr := r.lock.release(); lerr != nil && err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("closing run %s: %w", r.dir, err)
	}
	return nil
}

// Abandon undoes a start that did no work: when nothing was ever committed
// here (no manifest, no shard, no failure, nothing buffered), it removes
// what Open created (the whole directory, with whatever else was written
// into it since, when Open created the directory; otherwise the shards
// directory and LOCK if Open created them) and releases the lock. When
// there is work to keep it is Close.
func (r *Run) Abandon() error {
	r.mu.Lock()
	keep := r.closed || r.onDisk || len(r.man.Shards) > 0 || len(r.buf) > 0 || r.failLines > 0 || (r.failLog != nil && r.failLog.Exists())
	r.mu.Unlock()
	if keep {
		return r.Close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	err := r.removeCreated()
	if lerr := r.lock.release(); lerr != nil && err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("abandoning run %s: %w", r.dir, err)
	}
	return nil
}

// removeCreated removes what Open created, LOCK last.
func (r *Run) removeCreated() error {
	if r.createdDir {
		entries, err := r.fs.ReadDir(r.dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name() != LockName {
				if err := fsys.RemoveAll(r.fs, filepath.Join(r.dir, e.Name())); err != nil {
					return err
				}
			}
		}
		if err := fsys.RemoveAll(r.fs, r.dir); err != nil {
			return err
		}
		return fsys.SyncDir(r.fs, filepath.Dir(filepath.Clean(r.dir)))
	}
	if r.createdShards {
		if err := r.fs.Remove(r.layout.Shards()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", r.layout.Shards(), err)
		}
	}
	if r.createdLock {
		if err := r.fs.Remove(r.layout.Lock()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", r.layout.Lock(), err)
		}
	}
	return fsys.SyncDir(r.fs, r.dir)
}
