package llm

import (
	"context"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys/faultfs"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// waitFor polls cond until it holds, failing the test after a minute (a
// guard against a hang, not a speed bound: it returns once cond holds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// content is the first message of the server's n-th request (1-based).
func (s *server) content(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, _ := s.bodies[n-1]["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	m, _ := msgs[0].(map[string]any)
	c, _ := m["content"].(string)
	return c
}

func (c *controller) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiters.Len()
}

// TestWaitersAreServedByPriority: slots go to the smallest order first,
// then in arrival order; requests without an order come last; a waiter
// that gives up leaves the queue without disturbing it.
func TestWaitersAreServedByPriority(t *testing.T) {
	c := newController(1, 0, 0)
	if _, err := c.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		name  string
		ctx   context.Context
		quits bool
	}
	canceled, cancel := context.WithCancel(WithPriority(t.Context(), 0))
	arrivals := []arrival{
		{"none-1", t.Context(), false},
		{"5", WithPriority(t.Context(), 5), false},
		{"3-first", WithPriority(t.Context(), 3), false},
		{"0-quits", canceled, true},
		{"none-2", t.Context(), false},
		{"3-second", WithPriority(t.Context(), 3), false},
		{"1", WithPriority(t.Context(), 1), false},
	}
	served := make(chan string, len(arrivals))
	var wg sync.WaitGroup
	for i, a := range arrivals {
		wg.Go(func() {
			if _, err := c.acquire(a.ctx); err != nil {
				if !a.quits {
					t.Errorf("%s: %v", a.name, err)
				}
				return
			}
			served <- a.name
			c.release()
		})
		waitFor(t, a.name+" to queue", func() bool { return c.waiting() == i+1 })
	}
	cancel()
	waitFor(t, "the canceled waiter to leave", func() bool { return c.waiting() == len(arrivals)-1 })
	c.release()
	wg.Wait()
	close(served)
	var got []string
	for name := range served {
		got = append(got, name)
	}
	want := []string{"1", "3-first", "3-second", "5", "none-1", "none-2"}
	if !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

func TestPriorityOfAContextWithoutOne(t *testing.T) {
	if got := priorityOf(t.Context()); got != math.MaxUint64 {
		t.Errorf("priorityOf(no order) = %d, want the largest", got)
	}
	if got := priorityOf(WithPriority(t.Context(), 7)); got != 7 {
		t.Errorf("priorityOf(7) = %d", got)
	}
}

// TestRetryGoesBeforeNewerRequests is the mechanism that keeps a run with
// sporadic 429s from stalling on its tail: once an older problem's request
// has waited out its Retry-After, it takes the next free slot ahead of the
// requests of newer problems that queued meanwhile, instead of queueing
// again behind all of them.
func TestRetryGoesBeforeNewerRequests(t *testing.T) {
	var mu sync.Mutex
	var arrivals []string
	gates := map[string]chan struct{}{"B": make(chan struct{}), "C": make(chan struct{})}
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		name := srv.content(n)
		mu.Lock()
		arrivals = append(arrivals, name)
		first429 := name == "A" && slices.Index(arrivals, "A") == len(arrivals)-1
		mu.Unlock()
		if first429 {
			w.Header().Set("Retry-After-Ms", "1")
			writeJSON(w, http.StatusTooManyRequests, []byte(`{"error":{"message":"slow down"}}`))
			return
		}
		if g, ok := gates[name]; ok {
			<-g
		}
		writeJSON(w, 200, okBody(1))
	})
	t.Cleanup(func() { // a failed wait must not leave the server's handlers stuck
		for _, g := range gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
	})
	opt := fastOptions()
	opt.MaxInFlight = 1
	c := newTestClient(t, srv.endpoint(), opt, nil, nil)
	var wg sync.WaitGroup
	send := func(name string, order uint64) {
		wg.Go(func() {
			if _, err := c.Chat(WithPriority(t.Context(), order), simpleRequest(name)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	sent := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(arrivals) == n }
	}
	send("B", 2) // holds the only slot
	waitFor(t, "B to be sent", sent(1))
	send("C", 3)
	send("D", 4)
	waitFor(t, "C and D to queue", func() bool { return c.ctrl.waiting() == 2 })
	send("A", 1) // the oldest problem's request
	waitFor(t, "A to queue", func() bool { return c.ctrl.waiting() == 3 })
	close(gates["B"]) // A goes next, gets a 429, and C takes the slot
	waitFor(t, "A's 429 and C", sent(3))
	waitFor(t, "A's retry to queue beside D", func() bool { return c.ctrl.waiting() == 2 })
	close(gates["C"])
	waitFor(t, "every request", sent(5))
	wg.Wait()
	want := []string{"B", "A", "C", "A", "D"}
	if !slices.Equal(arrivals, want) {
		t.Errorf("the server saw %v, want %v (A's retry ahead of the newer D)", arrivals, want)
	}
}

// TestSlotIsFreedOnceTheAnswerIsWritten: a request slot is freed once its
// answer is written to the cache's log, so a killed process loses at most
// as many answers as there are slots (the kernel keeps what was written),
// without waiting for the disk's sync; the answer reaches its caller only
// once it is durable, so nothing is built on an answer a power loss could
// take back.
func TestSlotIsFreedOnceTheAnswerIsWritten(t *testing.T) {
	syncing, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	ffs := &faultfs.FS{}
	path := filepath.Join(t.TempDir(), "cache.db")
	cache := openCache(t, path, nil, cache.WithFS(ffs))
	t.Cleanup(func() { cache.Close() })
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // first, should a wait fail
	ffs.SetHold(func(op, name string) {
		if op == "sync" && filepath.Base(name) == "cache.db" {
			once.Do(func() { close(syncing); <-release })
		}
	})
	var logAtHit []int64
	var mu sync.Mutex
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		st, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		logAtHit = append(logAtHit, st.Size())
		mu.Unlock()
		writeJSON(w, 200, okBody(1))
	})
	opt := fastOptions()
	opt.MaxInFlight = 1
	c := newTestClient(t, srv.endpoint(), opt, cache, nil)
	var wg sync.WaitGroup
	var answered atomic.Int32
	ask := func(q string) {
		wg.Go(func() {
			if _, err := c.Chat(t.Context(), simpleRequest(q)); err != nil {
				t.Errorf("%s: %v", q, err)
			}
			answered.Add(1)
		})
	}
	ask("first")
	<-syncing // the first answer is written; its sync is held
	ask("second")
	waitFor(t, "the second request to be sent while the first answer's sync is held", func() bool { return srv.hits.Load() == 2 })
	mu.Lock()
	if logAtHit[1] <= logAtHit[0] {
		t.Errorf("the log held %d bytes when the second request was sent, %d at the first: the first answer was not written before its slot was freed", logAtHit[1], logAtHit[0])
	}
	mu.Unlock()
	if n := answered.Load(); n != 0 {
		t.Errorf("%d answers reached their callers before they were durable", n)
	}
	released.Do(func() { close(release) })
	wg.Wait()
	if got := srv.hits.Load(); got != 2 {
		t.Errorf("%d requests sent in all, want 2", got)
	}
}

// TestRequestIsCountedWhenSent: a request that gave up while waiting for a
// slot was never sent, and the meter does not count it.
func TestRequestIsCountedWhenSent(t *testing.T) {
	gate := make(chan struct{})
	var opened sync.Once
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		<-gate
		writeJSON(w, 200, okBody(1))
	})
	opt := fastOptions()
	opt.MaxInFlight = 1
	meter := NewMeter(nil, Budget{})
	c := newTestClient(t, srv.endpoint(), opt, nil, meter)
	t.Cleanup(func() { opened.Do(func() { close(gate) }) })
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := c.Chat(t.Context(), simpleRequest("sent")); err != nil {
			t.Errorf("sent: %v", err)
		}
	})
	waitFor(t, "the first request to be sent", func() bool { return srv.hits.Load() == 1 })
	ctx, cancel := context.WithCancel(t.Context())
	wg.Go(func() {
		if _, err := c.Chat(ctx, simpleRequest("never sent")); !errors.Is(err, context.Canceled) {
			t.Errorf("never sent: %v; want canceled", err)
		}
	})
	waitFor(t, "the second request to wait for the slot", func() bool { return c.ctrl.waiting() == 1 })
	cancel()
	waitFor(t, "the second request to give up", func() bool { return c.ctrl.waiting() == 0 })
	opened.Do(func() { close(gate) })
	wg.Wait()
	if got := meter.Snapshot().Total.Requests; got != 1 {
		t.Errorf("meter counted %d requests, want the 1 that was sent", got)
	}
}

// TestAdmitWaitsForDemand: work is admitted while the attempts waiting for
// a slot, plus those admitted work is about to send, are fewer than the
// limit; an admission's promise ends when its first attempt asks for a
// slot, or when its work ends without sending anything.
func TestAdmitWaitsForDemand(t *testing.T) {
	c := newController(2, 0, 0)
	ctx := t.Context()
	first, err := c.admit(ctx, 2) // promised 2: no more demand
	if err != nil {
		t.Fatal(err)
	}
	admitted := make(chan *admission, 2)
	admitLater := func(what string, weight int) {
		go func() {
			a, err := c.admit(ctx, weight)
			if err != nil {
				t.Error(err)
			}
			admitted <- a
		}()
		waitFor(t, what+" to wait", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.demand) == 1 })
	}
	admitLater("the second admission", 2)
	// first's two attempts take both slots: its promise is kept, nothing waits
	fctx := context.WithValue(ctx, admissionKey{}, first)
	for range 2 {
		if _, err := c.acquire(fctx); err != nil {
			t.Fatal(err)
		}
	}
	second := receive(t, admitted)
	c.mu.Lock()
	if c.promised != 2 {
		t.Errorf("promised %d after the second admission, want 2", c.promised)
	}
	c.mu.Unlock()
	// second sends nothing; its end frees the promise for a third
	admitLater("the third admission", 1)
	second.settle()
	second.settle() // twice is once
	third := receive(t, admitted)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.promised != 1 || third == nil {
		t.Errorf("promised %d with the third admitted, want 1", c.promised)
	}
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute): // a guard against a hang, not a speed bound
		t.Fatal("timed out waiting for an admission")
		panic("unreachable")
	}
}

// TestAdmitGivesUpWithItsContext: a caller that stops waiting leaves the
// line without taking a turn from the others.
func TestAdmitGivesUpWithItsContext(t *testing.T) {
	c := newController(1, 0, 0)
	if _, err := c.admit(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error)
	go func() { _, err := c.admit(ctx, 1); gaveUp <- err }()
	waitFor(t, "the admission to wait", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.demand) == 1 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("admit after cancel: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.demand) != 0 || c.promised != 1 {
		t.Errorf("after giving up: %d waiting, %d promised; want 0 and 1", len(c.demand), c.promised)
	}
}
