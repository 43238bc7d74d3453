package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm/cache"

	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/internal/testkit/simproc"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/schema"
)

// TestCrashSafety kills the run with SIGKILL at moments drawn from a logged
// seed (after a number of requests reached the endpoint), several times in a
// row on the same run directory, and resumes it each time: no id may be
// missing or doubled, every shard must stay readable, and the requests sent
// again after a resume may be no more than those in flight at the kill: sent,
// by the endpoint's request log, but whose answer was not yet durable in the
// cache (a slot is freed when the answer arrives; its cache write follows).
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	kills := 0
	for trial := range longtest.Pick(t, 2, 3) { // with the empirical stage, and without
		srv, job, jobFile, rows := killableJob(t, 4, func(j *job.Job) { j.Empirical.Enabled = trial%2 == 0 })
		kills += killAndResume(t, srv, job, jobFile, fmt.Sprintf("trial %d", trial), killPlan{
			killAfter: func(int) int { return 10 + rng.IntN(150) },
			check:     func(rep *Report) { checkAccounted(t, job.Out, rows, rep) },
			spend:     trial == 0,
		})
	}
	if kills == 0 {
		t.Fatal("no run was killed; every run finished before its kill point")
	}
}

// requestLog is a simulated endpoint's request log: a sim.Server, or a
// simproc.Server (the endpoint in its own process).
type requestLog interface {
	Count() int64     // requests that arrived
	Log() []sim.Entry // requests that ended
}

// killPlan says when killAndResume kills a run and what it checks after.
type killPlan struct {
	killAfter func(cycle int) int // requests the cycle's process may send before it is killed
	check     func(rep *Report)   // the finished run's accounting
	spend     bool                // the run spends what an uninterrupted run spends
}

// killAndResume kills the run of jobFile three times (after the requests
// plan.killAfter allows) and resumes it each time, then finishes it: no
// request may be sent again but those in flight at the kill, and
// plan.check must hold of the finished run. It returns how many times it
// killed the run.
func killAndResume(t *testing.T, srv requestLog, j job.Job, jobFile string, what string, plan killPlan) int {
	t.Helper()
	kills := 0
	sentByKilled := map[uint64]bool{} // requests of the last killed process
	countResent := func(from int) int {
		n := 0
		for _, e := range srv.Log()[from:] {
			if sentByKilled[e.Hash] {
				n++
				delete(sentByKilled, e.Hash)
			}
		}
		return n
	}
	inFlightAtKill := 0
	for cycle := range 3 {
		from := len(srv.Log())
		cachedAtStart := cacheLen(t, j.Out)
		killAfter := plan.killAfter(cycle)
		killed := runChildUntil(t, jobFile, func() bool { return srv.Count() >= int64(from+killAfter) })
		if killed {
			kills++
		}
		// Every request the dead process sent ends in one log entry: wait for them all.
		waitFor(t, "the endpoint to finish the killed client's requests", func() bool { return int64(len(srv.Log())) == srv.Count() })

		if cycle > 0 {
			if resent := countResent(from); resent > inFlightAtKill {
				t.Errorf("%s cycle %d: %d requests sent again after the resume, more than the %d in flight at the kill", what, cycle, resent, inFlightAtKill)
			}
		}
		checkShardFiles(t, j.Out)
		entries := srv.Log()[from:]
		sentByKilled = map[uint64]bool{}
		for _, e := range entries {
			sentByKilled[e.Hash] = true
		}
		inFlightAtKill = len(entries) - (cacheLen(t, j.Out) - cachedAtStart)
		t.Logf("%s cycle %d: killed=%v after %d requests (limit %d); %d in flight at the end", what, cycle, killed, len(entries), killAfter, inFlightAtKill)
	}

	from := len(srv.Log())
	rep, err := Run(context.Background(), j, Options{})
	if err != nil {
		t.Fatalf("%s: final resume: %v", what, err)
	}
	if resent := countResent(from); resent > inFlightAtKill {
		t.Errorf("%s: %d requests sent again after the final resume, more than the %d in flight at the kill", what, resent, inFlightAtKill)
	}
	if rep.Status != StatusFinished {
		t.Fatalf("%s: final status %q (%s)", what, rep.Status, rep.StopReason)
	}
	plan.check(rep)
	if plan.spend {
		checkSpendAsUninterrupted(t, j, rep)
	}
	return kills
}

// checkSpendAsUninterrupted runs job again, uninterrupted, into a new
// directory: the killed and resumed run must report the same tokens and
// cost, though report.json was lost with every kill (the cache's own record
// of what it paid for is what counts).
func checkSpendAsUninterrupted(t *testing.T, j job.Job, killed *Report) {
	t.Helper()
	clean := j
	clean.Out = j.Out + "-uninterrupted"
	rep := runBuilt(t, clean)
	got, want := killed.LLM.Total, rep.LLM.Total
	if got.PromptTokens != want.PromptTokens || got.CompletionTokens != want.CompletionTokens || math.Abs(got.CostUSD-want.CostUSD) > 1e-9 {
		t.Errorf("after kills and resumes the run spent %d+%d tokens, $%.6f; uninterrupted: %d+%d tokens, $%.6f",
			got.PromptTokens, got.CompletionTokens, got.CostUSD, want.PromptTokens, want.CompletionTokens, want.CostUSD)
	}
	if want.CostUSD == 0 {
		t.Error("the uninterrupted run cost nothing: the test job needs a price")
	}
}

// runChildUntil runs the job file in a child process, the built distill
// (`distill run --config jobFile`: not race-instrumented, since a process
// killed with SIGKILL gains nothing from the race detector; the resumes
// that follow run in the test's own process), and kills it with SIGKILL
// once killNow holds; it reports whether it killed it (false: the child
// finished first).
func runChildUntil(t *testing.T, jobFile string, killNow func() bool) bool {
	t.Helper()
	cmd := exec.Command(testbin.Command(t, "cmd/distill"), "run", "--config", jobFile, "--quiet")
	var stderr runtest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			if err != nil && !childRunEnded(err) {
				t.Fatalf("the run failed on its own: %v\n%s", err, stderr.String())
			}
			return false
		case <-tick.C:
			if killNow() {
				cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return true
			}
		}
	}
}

// childRunEnded reports whether a child distill run's exit error is one of
// a run that ended without an error (Run returned none): some problems
// failed (3) or the run stopped (4), as opposed to a failed run (1) or a
// usage error (2).
func childRunEnded(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	code := exit.ExitCode()
	return code == 3 || code == 4
}

// runBuilt runs j to its end with the built distill (`distill run`, not
// race-instrumented) and returns its report.json: for a reference run
// whose figures a test compares with the run it is about.
func runBuilt(t *testing.T, j job.Job) *Report {
	t.Helper()
	jobFile := j.Out + ".yaml"
	writeJobFile(t, jobFile, j)
	cmd := exec.Command(testbin.Command(t, "cmd/distill"), "run", "--config", jobFile, "--quiet")
	if out, err := cmd.CombinedOutput(); err != nil && !childRunEnded(err) {
		t.Fatalf("distill run (the reference run): %v\n%s", err, out)
	}
	rep, ok, err := readReport(fsys.OS, j.Out)
	if err != nil || !ok {
		t.Fatalf("the reference run's report: %v (found %v)", err, ok)
	}
	return &rep
}

// cacheLen is the number of answered requests in a run's cache (0 before the run exists).
func cacheLen(t testing.TB, runDir string) int {
	t.Helper()
	path := filepath.Join(runDir, "cache.db")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return 0
	}
	c, err := cache.Open(path)
	if err != nil {
		t.Fatalf("opening the cache: %v", err)
	}
	defer c.Close()
	n, err := c.Len()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkShardFiles reads every committed shard file in the directory, listed in
// the manifest or not yet: each must read whole, and no id may appear twice.
func checkShardFiles(t testing.TB, runDir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(runDir, "shards", "part-*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, f := range files {
		err := corpus.ScanShard(f, func(r *schema.Record) error {
			if other, dup := seen[r.ID]; dup {
				return fmt.Errorf("id %s is in %s and %s", r.ID, other, f)
			}
			seen[r.ID] = f
			return nil
		})
		if err != nil {
			t.Errorf("shard %s: %v", f, err)
		}
	}
}

// killableProblems is the number of problems of killableJob: enough for
// three kills, each after some 10-160 requests, to land mid-run (a run
// sends some 10 requests a problem), and no more, since every request is
// served by the test's own race-instrumented simulated endpoint.
const killableProblems = 30

// killableJob is a job of killableProblems problems with n=8 and 16
// requests in flight against a simulated endpoint of 20 ms latency that
// logs every request, shards of shardRows records, changed by edit, and
// written to a job file for runChildUntil; and its problems. The endpoint
// runs in its own process (simproc): what the kill tests are about is the
// run's resumes, not serving its requests, which would take most of their
// CPU under the race detector.
func killableJob(t *testing.T, shardRows int, edit func(*job.Job)) (*simproc.Server, job.Job, string, []runtest.Problem) {
	t.Helper()
	return killableJobWith(t, shardRows, sim.Config{}, edit)
}

// killableJobWith is killableJob against a simulated endpoint with cfg's
// judges (Config.Judges).
func killableJobWith(t *testing.T, shardRows int, cfg sim.Config, edit func(*job.Job)) (*simproc.Server, job.Job, string, []runtest.Problem) {
	t.Helper()
	dir := t.TempDir()
	rows := runtest.MakeProblems(killableProblems)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	srv := simproc.Start(t, sim.Config{Answers: runtest.AnswersOf(rows), Latency: 20 * time.Millisecond, Judges: cfg.Judges})
	job := runtest.TestJob(input, filepath.Join(dir, "run"), srv.URL)
	job.Rollout.N = 8
	job.Limits.Concurrency = 16
	job.Output.ShardRows = shardRows
	if edit != nil {
		edit(&job)
	}
	jobFile := filepath.Join(dir, "job.yaml")
	job = writeJobFile(t, jobFile, job)
	return srv, job, jobFile, rows
}

// writeJobFile writes j to path for runChildUntil and returns the job as
// distill run reads it back (job.PrepareJob fills in the defaults a job
// file leaves out), which the test's own runs must use too: the killed
// runs and the resumes are one job.
func writeJobFile(t testing.TB, path string, j job.Job) job.Job {
	t.Helper()
	b, err := yaml.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	prepared, err := job.PrepareJob(path, nil)
	if err != nil {
		t.Fatalf("the job file %s: %v", path, err)
	}
	return prepared
}
