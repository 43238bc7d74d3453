package corpus

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
	"github.com/rubricforge/rubricforge/schema"
)

var (
	crashAll  = flag.Bool("crash.all", false, "crash tests: every point (as make test-long), not a cover")
	crashSeed = flag.Uint64("crash.seed", 20260512, "crash tests: seed of the torn tails")
)

// crashEvery is the stride of the default cover of crash points (see
// coverPoints).
const crashEvery = 24

// coverPoints is the points a crash test visits. The long form (make
// test-long, or -crash.all) visits every one; make test, with the race
// detector or without, a cover: the first point of each class (class
// is an operation's kind: every kind is crashed at, or fails), the last
// point, and every crashEvery-th point.
func coverPoints[T any](t *testing.T, points []T, class func(T) string) []T {
	t.Helper()
	if *crashAll || longtest.Pick(t, false, true) {
		return points
	}
	seen := map[string]bool{}
	var out []T
	for i, p := range points {
		c := class(p)
		if i%crashEvery == 0 || !seen[c] || i == len(points)-1 {
			out = append(out, p)
		}
		seen[c] = true
	}
	t.Logf("visiting %d of %d points (-crash.all or make test-long: every one)", len(out), len(points))
	return out
}

// crashDir is the run directory of the crash tests, inside /data, which
// exists durably before they start.
const crashDir = "/data/run"

func newCrashFS(t testing.TB) *crashfs.FS {
	t.Helper()
	c := crashfs.New()
	if err := c.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return c
}

// logCounter is a slog handler that keeps the messages logged.
type logCounter struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }

func (l *logCounter) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// ledger is what the scenario was told succeeded.
type ledger struct {
	appended  map[string]bool // Append was called (a failed Append may still have committed the record)
	committed map[string]bool // a later Commit or Close returned nil
	failed    map[string]bool // RecordFailure returned nil
	run       *Run            // the open Run when the scenario stopped, if any
}

func newLedger() *ledger {
	return &ledger{appended: map[string]bool{}, committed: map[string]bool{}, failed: map[string]bool{}}
}

func (l *ledger) commit() {
	for id := range l.appended {
		l.committed[id] = true
	}
}

// scenarioRecords are the records of the crash scenario: 17 small records,
// the first 15 of job fp-a, the rest of fp-b.
func scenarioRecords() []schema.Record {
	recs := genRecords(21, 0, 17)
	for i := range recs {
		recs[i].Provenance.JobFingerprint = "fp-a"
		if i >= 15 {
			recs[i].Provenance.JobFingerprint = "fp-b"
		}
		recs[i].Rollouts = recs[i].Rollouts[:min(len(recs[i].Rollouts), 2)]
		recs[i].Problem = fmt.Sprintf("problem %d", i)
		for j := range recs[i].Rollouts {
			recs[i].Rollouts[j].Text = ""
		}
		for j := range recs[i].Rubric {
			recs[i].Rubric[j].Text = "item"
		}
	}
	return recs
}

// crashScenario is two sessions of a run with ShardRows 8: commits at
// several points (shards of 2, 3, 8 and 1 rows), failure records (one later
// superseded by its record), a compaction that merges the three small
// shards, a close; then a resume that appends, commits, fails one more
// problem and closes. It stops at the first error, as the pipeline does.
func crashScenario(fsy fsys.FS, log *slog.Logger, recs []schema.Record, l *ledger) error {
	opt := Options{FS: fsy, ShardRows: 8, RowGroupRows: 3, ToolVersion: "crash", Logger: log}
	r, err := Open(crashDir, opt)
	if err != nil {
		return err
	}
	l.run = r
	r.SetJob("fp-a", map[string]string{"rollout.model": "<m> & co"})
	appendN := func(from, to int) error {
		for i := from; i < to; i++ {
			l.appended[recs[i].ID] = true
			if err := r.Append(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	commit := func() error {
		if err := r.Commit(); err != nil {
			return err
		}
		l.commit()
		return nil
	}
	fail := func(id, reason string) error {
		if err := r.RecordFailure(Failure{ID: id, Stage: "distill", Reason: reason}); err != nil {
			return err
		}
		l.failed[id] = true
		return nil
	}
	steps := []func() error{
		func() error { return appendN(0, 2) }, commit,
		func() error { return fail("bad-1", "reply had <think> tags") },
		func() error { return appendN(2, 5) }, commit,
		func() error { return fail(recs[13].ID, "timeout") },
		func() error { return appendN(5, 14) }, commit, // 8 committed by Append, 1 by Commit
		func() error { _, err := r.Compact(); return err },
		func() error { return appendN(14, 15) },
		func() error { err := r.Close(); l.run = nil; return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	l.commit()

	r, err = Open(crashDir, opt)
	if err != nil {
		return err
	}
	l.run = r
	r.SetJob("fp-b", map[string]string{"rollout.model": "other"})
	steps = []func() error{
		func() error { return appendN(15, 17) }, commit,
		func() error { return fail("bad-2", "judge said [] & {}") },
		func() error { err := r.Close(); l.run = nil; return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	l.commit()
	return nil
}

// checkReopens opens the run directory on fsy with the real code and checks
// what a user relies on: every committed record exactly once and nothing
// never appended, no corrupt or unlisted shard, the manifest and the shards
// (and their id lists) agree, the job history counts the records, every
// acknowledged failure is readable, and a second open changes nothing.
func checkReopens(t *testing.T, fsy fsys.FS, l *ledger, what string) {
	t.Helper()
	logs := &logCounter{}
	r, err := Open(crashDir, Options{FS: fsy, ShardRows: 8, Logger: slog.New(logs)})
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	defer r.Close()
	if n := logs.count("skipped bad lines"); n > 0 {
		t.Errorf("%s: the failures log has bad lines in its middle", what)
	}
	m := r.Manifest()
	seen := map[string]int{}
	byFP := map[string]int64{}
	if r.onDisk {
		for _, s := range m.Shards {
			if _, err := scanFileFS(fsy, crashDir+"/"+s.File, openShard, func(row *idRow) error {
				seen[row.ID]++
				byFP[row.Provenance.JobFingerprint]++
				return nil
			}); err != nil {
				t.Fatalf("%s: reading the corpus: %v", what, err)
			}
		}
		v, err := verify(fsy, crashDir)
		if err != nil || !v.OK() {
			t.Fatalf("%s: verify: %v %v", what, err, v.Problems)
		}
	} else if len(m.Shards) > 0 {
		t.Fatalf("%s: shards listed but no manifest on disk", what)
	}
	for id, n := range seen {
		if n != 1 || !l.appended[id] {
			t.Errorf("%s: record %s is there %d times (appended: %v)", what, id, n, l.appended[id])
		}
	}
	for id := range l.committed {
		if seen[id] != 1 {
			t.Errorf("%s: committed record %s lost", what, id)
		}
	}
	if int(m.Rows) != len(seen) || r.DoneCount() != len(seen) {
		t.Errorf("%s: manifest rows %d, done %d, records %d", what, m.Rows, r.DoneCount(), len(seen))
	}
	for _, j := range m.Jobs {
		if j.Records != byFP[j.Fingerprint] {
			t.Errorf("%s: job %s counts %d records, the corpus holds %d", what, j.Fingerprint, j.Records, byFP[j.Fingerprint])
		}
	}
	if ents, err := fsy.ReadDir(crashDir + "/shards/broken"); err == nil && len(ents) > 0 {
		t.Errorf("%s: a shard was moved aside as broken: %v", what, ents[0].Name())
	}
	fails := r.Failures()
	for id := range l.failed {
		if _, ok := fails[id]; !ok && seen[id] == 0 {
			t.Errorf("%s: acknowledged failure of %s lost", what, id)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("%s: closing the reopened run: %v", what, err)
	}
	r2, err := Open(crashDir, Options{FS: fsy, ShardRows: 8, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("%s: second reopen: %v", what, err)
	}
	defer r2.Close()
	if r2.DoneCount() != len(seen) || !slices.Equal(shardFilesOf(r2.Manifest()), shardFilesOf(m)) {
		t.Errorf("%s: second reopen differs: done %d, shards %v, first %v", what, r2.DoneCount(), shardFilesOf(r2.Manifest()), shardFilesOf(m))
	}
}

// idRow projects a record on its id and job fingerprint.
type idRow struct {
	ID         string `parquet:"id"`
	Provenance struct {
		JobFingerprint string `parquet:"job_fingerprint"`
	} `parquet:"provenance"`
}

func shardFilesOf(m Manifest) []string {
	var out []string
	for _, s := range m.Shards {
		out = append(out, s.File)
	}
	return out
}

// cleanRun runs the scenario without faults and returns its operations,
// without those of the setup.
func cleanRun(t *testing.T) []crashfs.Op {
	t.Helper()
	c := newCrashFS(t)
	setup := len(c.Ops())
	l := newLedger()
	if err := crashScenario(c, quietLogger(), scenarioRecords(), l); err != nil {
		t.Fatalf("scenario without faults: %v", err)
	}
	ops := c.Ops()[setup:]
	if len(l.committed) != 17 {
		t.Fatalf("scenario committed %d records, want 17", len(l.committed))
	}
	checkReopens(t, c, l, "no crash")
	m, err := readManifest(c, crashDir)
	if err != nil {
		t.Fatal(err)
	}
	// Shards 0, 1 and 3 (2, 3 and 1 rows) merged into 4; 2 is full; 5 and 6
	// were committed after the compaction.
	want := []string{"shards/part-00002.parquet", "shards/part-00004.parquet", "shards/part-00005.parquet", "shards/part-00006.parquet"}
	if got := shardFilesOf(m); !slices.Equal(got, want) || m.Shards[1].Rows != 6 {
		t.Fatalf("scenario left shards %v; want %v with 6 rows in part-00004", got, want)
	}
	return ops
}

// TestCrashAtEveryOperation crashes the scenario at every operation that
// can change what a crash leaves, reboots (keeping a random part of unsynced
// appends, as real disks may) and reopens with the real code.
func TestCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	ops := cleanRun(t)
	var points []crashfs.Op
	for _, op := range ops {
		if op.Mutates() {
			points = append(points, op)
		}
	}
	t.Logf("tear seed %d; %d operations, %d that change the disk", *crashSeed, len(ops), len(points))
	rng := rand.New(rand.NewPCG(*crashSeed, 99))
	recs := scenarioRecords()
	for _, op := range coverPoints(t, points, func(op crashfs.Op) string { return op.Kind.String() }) {
		c := newCrashFS(t)
		c.CrashAt(op.Index)
		l := newLedger()
		err := crashScenario(c, quietLogger(), recs, l)
		if !errors.Is(err, crashfs.ErrCrashed) {
			t.Fatalf("crash at %v: scenario ended with %v", op, err)
		}
		if got := c.Ops()[op.Index]; got.Kind != op.Kind || tempFree(got.Path) != tempFree(op.Path) {
			t.Fatalf("the scenario is not deterministic: op %d is %v in the clean run, %v here", op.Index, op, got)
		}
		checkReopens(t, c.CrashClone(crashfs.CrashOptions{Tear: rng}), l, "crash at "+op.String())
	}
}

// tempFree is path with the random part of a temporary file's name
// (fsys.TempPath) taken out: a scenario run twice makes the same files
// under other temporary names.
func tempFree(path string) string { return tempRandom.ReplaceAllString(path, ".tmp") }

var tempRandom = regexp.MustCompile(`\.[0-9a-f]{12}\.tmp$`)

// errnoFor lists the errors worth injecting at op.
func errnoFor(op crashfs.Op) []syscall.Errno {
	switch op.Kind {
	case crashfs.OpOpen:
		if op.Writes() {
			return []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EIO}
		}
		return []syscall.Errno{syscall.EIO}
	case crashfs.OpWrite:
		return []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EROFS}
	case crashfs.OpSync, crashfs.OpSyncDir:
		return []syscall.Errno{syscall.EIO, syscall.ENOSPC}
	case crashfs.OpRename, crashfs.OpMkdir:
		return []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EIO}
	case crashfs.OpRemove, crashfs.OpTruncate:
		return []syscall.Errno{syscall.EROFS, syscall.EIO}
	case crashfs.OpRead:
		return []syscall.Errno{syscall.EIO}
	}
	return nil
}

// tolerated reports whether a failure of op may go unreported, given what
// was logged: clearing the holder note in LOCK on release is a courtesy,
// not data; an id list is derived data, so one that cannot be read is
// replaced, with a warning, after a full check of its shard.
func tolerated(op crashfs.Op, logs *logCounter) bool {
	switch {
	case op.Kind == crashfs.OpTruncate && strings.HasSuffix(op.Path, "/"+LockName):
		return true
	case strings.HasSuffix(op.Path, ".ids") && (op.Kind == crashfs.OpOpen || op.Kind == crashfs.OpRead):
		return logs.count("id list of a shard is unusable") == 1
	}
	return false
}

// TestInjectedErrors fails each operation of the scenario in turn with
// ENOSPC, EIO or EROFS: the scenario must stop with an error that names the
// cause (and wraps ErrNotDurable for a failed sync, after which the run
// refuses to write), and the directory must reopen with every committed
// record once.
func TestInjectedErrors(t *testing.T) {
	t.Parallel()
	ops := cleanRun(t)
	recs := scenarioRecords()
	type injection struct {
		op    crashfs.Op
		errno syscall.Errno
	}
	var points []injection
	for i, op := range ops {
		if op.Kind == crashfs.OpRead && i > 0 && ops[i-1].Kind == crashfs.OpRead && ops[i-1].Path == op.Path {
			continue // one read per run of reads of a file
		}
		// One errno per operation, taking turns, so every kind of
		// operation meets every errno that fits it.
		if errnos := errnoFor(op); len(errnos) > 0 {
			points = append(points, injection{op, errnos[i%len(errnos)]})
		}
	}
	t.Logf("%d operations, %d injections", len(ops), len(points))
	for _, p := range coverPoints(t, points, func(p injection) string { return p.op.Kind.String() }) {
		injectAndReopen(t, p.op, p.errno, recs)
	}
}

// injectAndReopen runs the scenario with errno injected at op, checks the
// error it stops with, and reopens the directory.
func injectAndReopen(t *testing.T, op crashfs.Op, errno syscall.Errno, recs []schema.Record) {
	t.Helper()
	what := fmt.Sprintf("%v at %v", errno, op)
	c := newCrashFS(t)
	c.FailAt(op.Index, errno)
	l := newLedger()
	logs := &logCounter{}
	err := crashScenario(c, slog.New(logs), recs, l)
	if len(c.Fired()) == 0 {
		t.Fatalf("%s: the scenario took another path (err %v)", what, err)
	}
	switch {
	case err == nil && tolerated(op, logs):
	case err == nil:
		t.Errorf("%s: no error reported", what)
	case !errors.Is(err, errno) || !strings.Contains(err.Error(), errno.Error()):
		t.Errorf("%s: error %q does not name the cause", what, err)
	case (op.Kind == crashfs.OpSync || op.Kind == crashfs.OpSyncDir) && !errors.Is(err, ErrNotDurable):
		t.Errorf("%s: a failed sync gave %q, which does not wrap ErrNotDurable", what, err)
	}
	c.ClearFaults()
	if l.run != nil {
		if errors.Is(err, ErrNotDurable) {
			if cerr := l.run.Commit(); !errors.Is(cerr, ErrNotDurable) {
				t.Errorf("%s: Commit after a failed sync: %v, want a refusal wrapping ErrNotDurable", what, cerr)
			}
		}
		l.run.Close()
	}
	checkReopens(t, c, l, what)
}

// TestOpenFailsCleanly: an error during Open returns no Run and leaves the
// lock free.
func TestOpenFailsCleanly(t *testing.T) {
	t.Parallel()
	c := newCrashFS(t)
	c.FailWhen(func(op crashfs.Op) bool { return op.Kind == crashfs.OpMkdir }, syscall.EROFS)
	if _, err := Open(crashDir, Options{FS: c, Logger: quietLogger()}); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Open on a read-only file system: %v", err)
	}
	c.ClearFaults()
	r, err := Open(crashDir, Options{FS: c, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(crashDir + "/" + ManifestName); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open wrote a manifest: %v", err)
	}
	r.Close()
}
