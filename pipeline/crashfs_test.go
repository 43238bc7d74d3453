package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm/cache"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/schema"
)

var (
	runCrashAll  = flag.Bool("runcrash.all", false, "run crash tests: visit every operation that changes the disk, not a cover of them (as make test-long does)")
	runCrashSeed = flag.Uint64("runcrash.seed", 20260514, "run crash tests: seed of the torn tails and of the resumes' second crash points")
)

// crashRunDir is the run directory on the crash file system; /data exists
// durably before a run starts.
const crashRunDir = "/data/run"

// crashRun is a small job whose run directory lives on a crashfs: 8
// problems, 4 rollouts each, shards of 3 rows, against the in-process
// simulated endpoint, started from a directory with two one-row shards;
// and what an uninterrupted run of it leaves.
type crashRun struct {
	job  job.Job
	rows []runtest.Problem
	opt  Options
	srv  *sim.Server

	want     map[string]schema.Record // normalized records of the uninterrupted run
	wantFail []string                 // problem ids the uninterrupted run recorded as failures
	ops      []crashfs.Op             // the operations of the uninterrupted run
	requests int64                    // the requests the uninterrupted run sent
	log      *runLog                  // what the runs said about merging small shards
	start    *crashfs.FS              // the run directory every run starts from
}

// runLog is a slog handler that counts the runs' messages about merging
// small shards at their end: done, and failed (a run error since merge
// failures are fatal; the counter stays as a check that none is only logged).
type runLog struct{ merged, mergeFailed atomic.Int64 }

func (l *runLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *runLog) Handle(_ context.Context, r slog.Record) error {
	switch {
	case r.Message == "merged small shards":
		l.merged.Add(1)
	case strings.HasPrefix(r.Message, "merging small shards failed"):
		l.mergeFailed.Add(1)
	}
	return nil
}
func (l *runLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *runLog) WithGroup(string) slog.Handler      { return l }

func newCrashRun(t *testing.T) *crashRun {
	t.Helper()
	f, _, opt := inProcessFixture(t, 8, sim.Config{})
	f.job.Out = crashRunDir
	f.job.Output.ShardRows = 3
	f.job.Limits.Concurrency = 4
	c := &crashRun{job: f.job, rows: f.rows, opt: opt, srv: f.srv, log: &runLog{}}
	c.opt.Logger = slog.New(c.log)
	c.start = c.startWithSmallShards(t)

	fsy := c.start.CrashClone(crashfs.CrashOptions{})
	sentBefore := c.srv.Count()
	if _, err := c.run(fsy); err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}
	if n := c.log.merged.Load(); n != 1 {
		t.Fatalf("the uninterrupted run merged small shards %d times, want once", n)
	}
	c.ops = fsy.Ops()
	c.requests = c.srv.Count() - sentBefore
	if n := c.cachedAnswers(t, fsy); int64(n) != c.requests {
		t.Fatalf("the uninterrupted run sent %d requests and cached %d answers; the request accounting below needs one per request", c.requests, n)
	}
	recs, fails := c.contents(t, fsy, false, "uninterrupted run")
	c.want = map[string]schema.Record{}
	for id, r := range recs {
		c.want[id] = normalized(r)
	}
	c.wantFail = fails
	if len(c.want) < len(c.rows)/2 {
		t.Fatalf("the uninterrupted run made only %d records of %d problems (failures %v)", len(c.want), len(c.rows), fails)
	}
	return c
}

// startWithSmallShards makes the run directory every run starts from: two
// records of the job, made by a first run, in two one-row shards, as
// sessions stopped early leave them, so that each run ends by merging them.
func (c *crashRun) startWithSmallShards(t *testing.T) *crashfs.FS {
	t.Helper()
	first := newRunCrashFS(t)
	if _, err := c.run(first); err != nil {
		t.Fatalf("first run: %v", err)
	}
	m, err := corpus.ReadManifestFS(first, crashRunDir)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := c.contents(t, first, false, "first run")
	ids := slices.Sorted(maps.Keys(recs))
	if len(ids) < 2 {
		t.Fatalf("the first run made %d records, want 2 or more", len(ids))
	}
	start := newRunCrashFS(t)
	run, err := corpus.Open(crashRunDir, corpus.Options{FS: start, ShardRows: c.job.Output.ShardRows, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	run.SetFingerprint(m.JobFingerprint)
	for _, id := range ids[:2] {
		if err := run.Append(recs[id]); err != nil {
			t.Fatal(err)
		}
		if err := run.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	return start
}

func newRunCrashFS(t testing.TB) *crashfs.FS {
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

// run runs the job to the end with its run directory on fsy.
func (c *crashRun) run(fsy fsys.FS) (*Report, error) {
	opt := c.opt
	opt.fs = fsy
	return Run(context.Background(), c.job, opt)
}

// mutating returns the indexes of the uninterrupted run's operations that
// can change what a crash leaves (crashing at any other one is the same as
// crashing at the next mutating one).
func (c *crashRun) mutating() []int {
	var out []int
	for _, op := range c.ops {
		if op.Mutates() {
			out = append(out, op.Index)
		}
	}
	return out
}

// contents reads the run directory on fsy as a user would and checks it is
// whole: no shard corrupt or unlisted (corpus.VerifyFS), the manifest's
// rows equal to the shards', no id twice in the shards, no id both a
// record and a failure. It returns the records by id and the failed ids.
// With leftovers, shard files the manifest does not list are let pass: a
// merge of small shards that failed after its manifest switch leaves the
// merged-away files for the next open to remove.
func (c *crashRun) contents(t *testing.T, fsy fsys.FS, leftovers bool, what string) (map[string]*schema.Record, []string) {
	t.Helper()
	v, err := corpus.VerifyFS(fsy, crashRunDir)
	if err != nil {
		t.Fatalf("%s: verifying the corpus: %v", what, err)
	}
	if leftovers {
		v.Problems = slices.DeleteFunc(v.Problems, func(p string) bool { return strings.Contains(p, "not listed in the manifest") })
	}
	if !v.OK() {
		t.Fatalf("%s: the corpus does not verify:\n  %s", what, strings.Join(v.Problems, "\n  "))
	}
	m, err := corpus.ReadManifestFS(fsy, crashRunDir)
	if err != nil {
		t.Fatalf("%s: reading the manifest: %v", what, err)
	}
	recs := map[string]*schema.Record{}
	err = corpus.ReadAllFS(fsy, crashRunDir, func(r *schema.Record) error {
		if _, dup := recs[r.ID]; dup {
			return fmt.Errorf("id %s appears twice in the shards", r.ID)
		}
		cp := *r
		recs[r.ID] = &cp
		return nil
	})
	if err != nil {
		t.Fatalf("%s: reading the corpus: %v", what, err)
	}
	if m.Rows != int64(len(recs)) || v.Rows != m.Rows {
		t.Errorf("%s: the manifest says %d rows, its shards list %d, they hold %d records", what, m.Rows, v.Rows, len(recs))
	}
	fails := readFailuresFS(t, fsy, what)
	for _, id := range fails {
		if _, ok := recs[id]; ok {
			t.Errorf("%s: problem %s is both a record and a failure", what, id)
		}
	}
	return recs, fails
}

// readFailuresFS returns the ids in the run's failures.jsonl, sorted.
func readFailuresFS(t *testing.T, fsy fsys.FS, what string) []string {
	t.Helper()
	b, err := fsys.ReadFile(fsy, corpus.Layout{Dir: crashRunDir}.Failures())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("%s: reading failures.jsonl: %v", what, err)
	}
	ids := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var f corpus.Failure
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("%s: failures.jsonl line %d: %v", what, i+1, err)
		}
		ids[f.ID] = true
	}
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// normalized is r without what legitimately differs between an
// uninterrupted run and a resumed one: when it was written, and what it cost
// (an answer from the cache costs nothing).
func normalized(r *schema.Record) schema.Record {
	n := *r
	n.Provenance.CreatedAt = time.Time{}
	n.Usage = schema.Usage{}
	return n
}

// checkComplete checks the run directory on fsy after a run that finished:
// every problem accounted for exactly once, as a record or a failure; the
// same records, field by field, as the uninterrupted run (so no answer was
// torn or lost on the way through the cache); the report's counts agree.
func (c *crashRun) checkComplete(t *testing.T, fsy fsys.FS, rep *Report, leftovers bool, what string) {
	t.Helper()
	recs, fails := c.contents(t, fsy, leftovers, what)
	if len(recs)+len(fails) != len(c.rows) {
		t.Errorf("%s: %d records + %d failures, want the %d problems", what, len(recs), len(fails), len(c.rows))
	}
	if !slices.Equal(fails, c.wantFail) {
		t.Errorf("%s: failed problems %v, the uninterrupted run failed %v", what, fails, c.wantFail)
	}
	for id, want := range c.want {
		got, ok := recs[id]
		if !ok {
			t.Errorf("%s: record %s missing", what, id)
			continue
		}
		if g := normalized(got); !reflect.DeepEqual(g, want) {
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(want)
			t.Errorf("%s: record %s differs from the uninterrupted run's:\n got %s\nwant %s", what, id, gb, wb)
		}
	}
	p := rep.Problems
	if rep.Status != StatusFinished || p.Pending != 0 || int(p.Done) != len(recs) || int(p.Failed+p.LeftOut) != len(fails) {
		t.Errorf("%s: report status %s, done %d failed %d left out %d pending %d; the corpus has %d records, %d failures",
			what, rep.Status, p.Done, p.Failed, p.LeftOut, p.Pending, len(recs), len(fails))
	}
	if rep.CorpusRows != int64(len(recs)) {
		t.Errorf("%s: report corpus_rows %d, the corpus has %d", what, rep.CorpusRows, len(recs))
	}
}

// cachedAnswers is how many answers the response cache on fsy holds. It
// opens a copy, so that what the run finds is exactly what was left.
func (c *crashRun) cachedAnswers(t *testing.T, fsy *crashfs.FS) int {
	t.Helper()
	cp := fsy.CrashClone(crashfs.CrashOptions{}) // what is durable: all of it after a crash or a finished run
	path := corpus.Layout{Dir: crashRunDir}.Cache()
	if _, err := cp.Stat(path); errors.Is(err, os.ErrNotExist) {
		return 0
	}
	cache, err := cache.Open(path, cache.WithFS(cp), cache.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("opening the response cache: %v", err)
	}
	defer cache.Close()
	return cache.Stats().Entries
}

// checkDurable checks, on the file system a power cut left after a run that
// returned no error, that everything the run reported is there: its
// report.json, and a whole corpus that agrees with it.
func (c *crashRun) checkDurable(t *testing.T, cut fsys.FS, leftovers bool, what string) {
	t.Helper()
	rep, ok, err := readReport(cut, crashRunDir)
	if err != nil || !ok {
		t.Fatalf("%s: Run returned no error, but report.json is not on disk (%v)", what, err)
	}
	c.checkComplete(t, cut, &rep, leftovers, what)
}

// TestRunCrashAtEveryOperation crashes a whole run (corpus, response cache,
// job.yaml, report.json) at each operation that changes the disk, keeping
// only what was synced (and, at every other point, a random part of each
// file's unsynced tail, as a disk may write back some pages before the power
// goes); then it reopens the crashed directory and resumes the job to the
// end (at every third point crashing the resume once more first), and
// checks the corpus is whole and equal to an uninterrupted run's.
func TestRunCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	c := newCrashRun(t)
	points := c.mutating()
	t.Logf("the uninterrupted run made %d file operations, %d of which change the disk; %d records, %d failures",
		len(c.ops), len(points), len(c.want), len(c.wantFail))
	tear := rand.New(rand.NewPCG(*runCrashSeed, 1))
	crashed, twice, finished := 0, 0, 0
	for n, at := range crashCover(t, c.ops, true) {
		fsy := c.start.CrashClone(crashfs.CrashOptions{})
		fsy.CrashAt(at)
		_, runErr := c.run(fsy)
		if !fsy.Crashed() {
			// The run's operations interleave differently each time, so
			// this one may have finished in fewer operations.
			if runErr != nil {
				t.Fatalf("crash at #%d: the run failed before the crash point: %v", at, runErr)
			}
			continue
		}
		crashed++
		var o crashfs.CrashOptions
		if n%2 == 1 {
			o.Tear = tear
		}
		after := fsy.CrashClone(o)
		what := fmt.Sprintf("crash at %s, torn tails %v", fsy.Ops()[at], o.Tear != nil)
		if runErr == nil {
			// The run finished before the crash point but for operations
			// it can do without.
			c.checkDurable(t, after, false, what+", before resuming")
			finished++
		}
		if n%3 == 2 {
			// The resume itself crashes, in its own repairs or later.
			again := tear.IntN(len(c.ops))
			after.CrashAt(again)
			if _, err := c.run(after); err != nil && !after.Crashed() {
				t.Fatalf("%s: resuming (to crash again): %v", what, err)
			}
			if after.Crashed() {
				what += fmt.Sprintf(", then the resume crashed at %s", after.Ops()[again])
				after = after.CrashClone(crashfs.CrashOptions{Tear: tear})
				twice++
			} else {
				after.CrashAt(-1) // it finished first
			}
		}
		cached := c.cachedAnswers(t, after)
		sentBefore := c.srv.Count()
		rep, err := c.run(after)
		if err != nil {
			t.Fatalf("%s: resuming: %v", what, err)
		}
		c.checkComplete(t, after, rep, false, what)
		// The resumed run asks only for what the crash left no durable,
		// whole answer for: every answer the cache kept is used, none is
		// asked again.
		if sent := c.srv.Count() - sentBefore; sent != c.requests-int64(cached) {
			t.Errorf("%s: the resumed run sent %d requests; the cache kept %d of the %d answers, so want %d", what, sent, cached, c.requests, c.requests-int64(cached))
		}
	}
	if crashed == 0 {
		t.Fatal("no run reached its crash point")
	}
	t.Logf("%d runs crashed and resumed (%d crashed again while resuming; %d had finished their durable work before the crash point); %d sessions merged small shards",
		crashed, twice, finished, c.log.merged.Load())
}

// TestRunDiskErrors fails one operation of a run that changes the disk with
// ENOSPC, EIO or EROFS in turn. The run must stop with an error that names
// the cause (and, for a failed sync, says the data may not be durable: a
// failed fsync is fatal) and is not a usage error (exit 1, not 2); or, when
// the operation was one the run can do without, finish with a whole corpus.
// Either way the directory must then reopen and resume to a whole corpus:
// at once, or after a power cut that follows the failure.
func TestRunDiskErrors(t *testing.T) {
	t.Parallel()
	c := newCrashRun(t)
	errnos := []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EROFS}
	stopped, absorbed := map[string]int{}, map[string]int{}
	for n, at := range crashCover(t, c.ops, false) {
		errno := errnos[n%len(errnos)]
		fsy := c.start.CrashClone(crashfs.CrashOptions{})
		failNext(fsy, c.ops[at], errno)
		mergeFailed := c.log.mergeFailed.Load()
		rep, runErr := c.run(fsy)
		fired := fsy.Fired()
		if len(fired) == 0 {
			// This run's operations interleaved differently and it ended
			// before the chosen index.
			if runErr != nil {
				t.Fatalf("%v at #%d: the run failed though no fault fired: %v", errno, at, runErr)
			}
			continue
		}
		op := fired[0]
		what := fmt.Sprintf("%v at %s", errno, op)
		if runErr == nil {
			absorbed[op.Kind.String()+" "+path.Base(op.Path)]++
			leftovers := c.log.mergeFailed.Load() > mergeFailed
			c.checkComplete(t, fsy, rep, leftovers, what+", which the run did without")
			c.checkDurable(t, fsy.CrashClone(crashfs.CrashOptions{}), leftovers, what+", which the run did without, then a power cut")
		} else {
			stopped[op.Kind.String()]++
			checkDiskError(t, runErr, errno, op, what)
		}
		fsy.ClearFaults()
		resumeOn, how := fsys.FS(fsy), "resumed"
		if n%2 == 1 {
			resumeOn, how = fsy.CrashClone(crashfs.CrashOptions{}), "resumed after a power cut"
		}
		rep, err := c.run(resumeOn)
		if err != nil {
			t.Fatalf("%s: %s: %v", what, how, err)
		}
		c.checkComplete(t, resumeOn, rep, false, what+", "+how)
	}
	if len(stopped) == 0 {
		t.Fatal("no injected error stopped a run")
	}
	t.Logf("injected errors that stopped the run, by operation: %v; that it did without: %v; %d sessions merged small shards, %d failed to and went on",
		stopped, absorbed, c.log.merged.Load(), c.log.mergeFailed.Load())
}

// checkDiskError checks the error of a run stopped by errno injected at op.
func checkDiskError(t *testing.T, err error, errno syscall.Errno, op crashfs.Op, what string) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Errorf("%s: the error does not name the cause: %v", what, err)
	}
	if (op.Kind == crashfs.OpSync || op.Kind == crashfs.OpSyncDir) && !errors.Is(err, fsys.ErrNotDurable) {
		t.Errorf("%s: a failed sync is not reported as data that may not be durable: %v", what, err)
	}
	if _, usage := errors.AsType[*job.UsageError](err); usage {
		t.Errorf("%s: a disk error reported as a usage error: %v", what, err)
	}
}
