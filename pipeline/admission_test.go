package pipeline

import (
	"context"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestHungRequestsDoNotKeepSlotsIdle: problems are admitted independently of
// request slots. Rollouts go to one endpoint, distillation to another, both
// with `concurrency` request slots. The endpoint hangs the first
// `concurrency` distill requests, which fills the distill endpoint; while
// they hang, the rollout endpoint must keep receiving requests from other
// problems. (When problems in flight equal the concurrency, the hung
// problems hold every problem slot and the rollout endpoint sits idle until
// the attempt timeout cuts the hung requests.)
func TestHungRequestsDoNotKeepSlotsIdle(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	f, tap, opt := inProcessFixture(t, 40, sim.Config{})
	jb := f.job
	jb.Rollout.BaseURL = "http://rollouts.invalid/v1"
	jb.Distill.BaseURL = "http://distiller.invalid/v1"
	jb.Judge.Enabled = false
	jb.Rollout.N = 1
	jb.Selection = job.Selection{} // every problem goes on to distillation
	jb.Limits.Concurrency = concurrency
	jb.Limits.ProblemsInFlight = 0             // the default under test
	jb.Limits.AttemptTimeout = 3 * time.Second // ends the hang when admission is broken, so the test can fail
	jb.Limits.MaxAttempts = 3

	var (
		mu               sync.Mutex
		released         = make(chan struct{})
		saturated        = make(chan struct{}) // closed when every distill slot hangs
		hung             int
		firstProblems    = map[string]bool{} // the problems answered before the distill endpoint filled up
		whileHung        int                 // rollout requests of other problems sent while distill hangs
		rolloutsInFlight int
		maxInFlightHung  int // most rollout requests in flight at once while distill hangs
	)
	releaseOnce := sync.OnceFunc(func() { close(released) })
	isClosed := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	tap.handle = func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
		switch {
		case strings.HasPrefix(r.URL.Host, "distiller") && !isClosed(released):
			mu.Lock()
			if hung < concurrency {
				hung++
				if hung == concurrency {
					close(saturated)
				}
			}
			mu.Unlock()
			select {
			case <-released:
				return nil, nil // answered by the simulated endpoint
			case <-r.Context().Done():
				releaseOnce() // an attempt timeout cut a hung request: the test has its answer
				return nil, r.Context().Err()
			}
		case kind == sim.KindRollout:
			problem := msgs[len(msgs)-1].Content
			mu.Lock()
			if len(firstProblems) < concurrency && !firstProblems[problem] && !isClosed(saturated) {
				firstProblems[problem] = true
				mu.Unlock()
				return nil, nil
			}
			mu.Unlock()
			select { // later problems' rollouts wait until the distill endpoint hangs
			case <-saturated:
			case <-released:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			mu.Lock()
			if !isClosed(released) {
				whileHung++
				rolloutsInFlight++
				maxInFlightHung = max(maxInFlightHung, rolloutsInFlight)
				if whileHung >= 2*concurrency {
					releaseOnce()
				}
			}
			mu.Unlock()
			defer func() { mu.Lock(); rolloutsInFlight--; mu.Unlock() }()
			return f.srv.Transport().RoundTrip(r)
		}
		return nil, nil
	}

	rep, err := Run(context.Background(), jb, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("problems in flight %d; while %d distill requests hung, %d rollout requests of other problems were sent (at most %d at once)",
		rep.ProblemsInFlight, hung, whileHung, maxInFlightHung)
	if whileHung < 2*concurrency {
		t.Errorf("while %d distill requests hung, only %d rollout requests of other problems were sent: problems in flight are bound to the request concurrency, so hung problems leave request slots idle", hung, whileHung)
	}
	if rep.ProblemsInFlight <= concurrency {
		t.Errorf("default problems in flight %d, want more than the concurrency %d", rep.ProblemsInFlight, concurrency)
	}
	if rep.Status != StatusFinished {
		t.Fatalf("status %s (%s)", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, f.rows, rep)
}

func TestProblemsInFlightDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		concurrency, n int
		maxTokens, set int
		want           int
	}{
		{"four times the concurrency", 64, 8, 0, 0, 256},
		{"bounded by the memory budget of long rollouts", 512, 16, 32768, 0, 127},
		{"an explicit setting wins", 64, 8, 0, 10, 10},
		{"never below one", 1, 1024, 1 << 20, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := job.DefaultJob()
			j.Limits.Concurrency, j.Rollout.N, j.Rollout.MaxTokens, j.Limits.ProblemsInFlight = tc.concurrency, tc.n, tc.maxTokens, tc.set
			if got := ProblemsInFlight(&j); got != tc.want {
				t.Errorf("ProblemsInFlight = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestProblemsUnderWayGoFirst: a problem's requests carry its admission
// order as their priority, so with one request slot and several problems in
// flight, a problem's distill and judge requests are sent as soon as its
// rollouts are in, not behind the rollouts of every newer problem. (With a
// first-come queue, a 429's retry and each later stage queued again behind
// all of them, and a run with sporadic 429s ended on a long tail.)
//
// It runs in fake time (synctest): a request's 20 ms pass only while every
// goroutine waits, so the work between a problem's stages takes no time
// however loaded the machine.
func TestProblemsUnderWayGoFirst(t *testing.T) { synctestThenEmptyPools(t, problemsUnderWayGoFirst) }

// synctestThenEmptyPools runs f in a synctest bubble, then empties the
// process's sync.Pools (two collections: the first moves what they hold to
// their victim caches, the second drops it). A run in the bubble reads
// its shards with parquet-go's zstd decoders, which parquet.Zstd keeps in
// a sync.Pool; a decoder made in the bubble holds channels that belong to
// it, and the next test to take it from the pool outside the bubble dies
// with "receive on synctest channel from outside bubble" (with GOGC=400,
// when no collection comes between, two runs of this package in two).
// The test is serial, so no parallel test takes from the pools meanwhile.
func synctestThenEmptyPools(t *testing.T, f func(*testing.T)) {
	defer func() {
		runtime.GC()
		runtime.GC()
	}()
	synctest.Test(t, f)
}

func problemsUnderWayGoFirst(t *testing.T) {
	f, tap, opt := inProcessFixture(t, 12, sim.Config{})
	jb := f.job
	jb.Limits.Concurrency = 1
	jb.Limits.ProblemsInFlight = 6
	jb.Selection = job.Selection{} // every problem goes on to distillation
	problemOf := func(msgs []sim.Message) int {
		var all strings.Builder
		for _, m := range msgs {
			all.WriteString(m.Content)
		}
		for i, p := range f.rows {
			if strings.Contains(all.String(), p.Problem) {
				return i
			}
		}
		return -1
	}
	var mu sync.Mutex
	var sent []int // the problem of each request, in the order sent
	tap.handle = func(_ *http.Request, _ sim.Kind, msgs []sim.Message) (*http.Response, error) {
		mu.Lock()
		sent = append(sent, problemOf(msgs))
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // a request takes far longer than the work between a problem's stages
		return nil, nil
	}
	rep, err := Run(context.Background(), jb, opt)
	if err != nil || rep.Status != StatusFinished {
		t.Fatalf("Run: %v (%+v)", err, rep)
	}
	// Between a problem's first request and its last, requests of problems
	// that started after it may go only while it has nothing to send (each
	// gap between its stages or repairs lets one through). The first problems are
	// admitted at once, in no fixed order, and are not checked.
	first, last := map[int]int{}, map[int]int{}
	var started []int
	for i, p := range sent {
		if _, ok := first[p]; !ok {
			first[p] = i
			started = append(started, p)
		}
		last[p] = i
	}
	for _, p := range started[jb.Limits.ProblemsInFlight:] {
		overtaken := 0
		for _, q := range sent[first[p]:last[p]] {
			if first[q] > first[p] {
				overtaken++
			}
		}
		if overtaken > 4 {
			t.Errorf("problem %d: %d requests of newer problems went while it was under way (requests in order: %v)", p, overtaken, sent)
		}
	}
	checkAccounted(t, jb.Out, f.rows, rep)
}

// TestProblemsStartWhenTheEndpointCanTakeThem: a worker starts a problem
// only when the rollout endpoint can take its rollouts, so while the one
// request slot is held, one problem is in flight, not problems_in_flight of
// them, each with goroutines and requests that only wait (at 100,000
// problems that pile cost ~100 MiB of RSS).
func TestProblemsStartWhenTheEndpointCanTakeThem(t *testing.T) {
	t.Parallel()
	f, tap, opt := inProcessFixture(t, 20, sim.Config{})
	job := f.job
	job.Limits.Concurrency = 1
	job.Limits.ProblemsInFlight = 8
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var status runtest.SyncBuffer
	opt.Status, opt.StatusEvery = &status, 5*time.Millisecond
	tap.handle = func(r *http.Request, _ sim.Kind, _ []sim.Message) (*http.Response, error) {
		select { // the first request holds the only slot until released
		case <-release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		return nil, nil
	}
	inFlight := regexp.MustCompile(`(\d+) in flight \|`)
	most := func() int {
		n := 0
		for _, m := range inFlight.FindAllStringSubmatch(status.String(), -1) {
			v, _ := strconv.Atoi(m[1])
			n = max(n, v)
		}
		return n
	}
	done := make(chan *Report)
	go func() {
		rep, err := Run(context.Background(), job, opt)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	waitFor(t, "a problem in flight", func() bool { return most() >= 1 })
	// Every other worker holds a problem and waits to be admitted: had
	// admission not waited for the endpoint, they would be in flight.
	waitFor(t, "the other workers to wait for admission", func() bool {
		st, err := ReadStatus(job.Out)
		return err == nil && st.Report != nil && len(st.Report.Endpoints) > 0 &&
			st.Report.Endpoints[0].Health.AdmissionsWaiting == job.Limits.ProblemsInFlight-1
	})
	held := most()
	once.Do(func() { close(release) })
	rep := <-done
	if held != 1 {
		t.Errorf("%d problems in flight while the only request slot was held, want 1", held)
	}
	if rep != nil {
		checkAccounted(t, job.Out, f.rows, rep)
	}
}
