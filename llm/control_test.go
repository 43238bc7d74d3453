package llm

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestControllerLimit(t *testing.T) {
	c := newController(8, 0, 0)
	now := time.Now()
	var epochs []uint64
	for range 8 {
		e, err := c.acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, e)
	}
	// The ninth waits, and gives up with its context.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ninth acquire: %v", err)
	}

	// A wave of 429s is a burst: it halves the limit once.
	for _, e := range epochs {
		c.record(e, outcomeRateLimited, now)
	}
	if l := c.currentLimit(); l != 4 {
		t.Fatalf("limit after a wave of 8 429s = %d, want 4", l)
	}
	if !strings.Contains(c.lowered, "8 of the last 8 attempts were answered 429") {
		t.Errorf("reason %q", c.lowered)
	}
	for range 8 {
		c.release()
	}

	// 429s of attempts sent before the decrease do not lower it again.
	for range 20 {
		c.record(epochs[0], outcomeRateLimited, now)
	}
	if l := c.currentLimit(); l != 4 {
		t.Errorf("stale 429s lowered the limit to %d", l)
	}

	// A burst under the new limit halves it again, down to 1.
	for want := 2; want >= 1; want-- {
		for range burstMin {
			e, _ := c.acquire(t.Context())
			c.record(e, outcomeRateLimited, now)
			c.release()
		}
		if l := c.currentLimit(); l != want {
			t.Fatalf("limit %d, want %d", l, want)
		}
	}

	// Additive recovery: +1 after a window of `limit` successes.
	e, _ := c.acquire(t.Context())
	c.release()
	for want := 2; want <= 8; want++ {
		for range want - 1 {
			c.record(e, outcomeOK, now)
		}
		if l := c.currentLimit(); l != want {
			t.Fatalf("limit %d, want %d", l, want)
		}
	}
	for range 100 {
		c.record(e, outcomeOK, now)
	}
	if l := c.currentLimit(); l != 8 {
		t.Errorf("limit grew past max: %d", l)
	}
}

// TestBurstDetector: the in-flight limit falls only on a burst of 429s,
// never on sporadic ones.
func TestBurstDetector(t *testing.T) {
	const seed = 20240611
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	tests := []struct {
		name    string
		is429   func(i int) bool
		n       int
		lowered bool
	}{
		{"4% random 429s", func(int) bool { return rng.Float64() < 0.04 }, 20000, false},
		{"10% random 429s", func(int) bool { return rng.Float64() < 0.10 }, 20000, false},
		{"a lone 429 now and then", func(i int) bool { return i%50 == 0 }, 5000, false},
		{"seven 429s at the start", func(i int) bool { return i < 7 }, 500, false},
		{"eight 429s at the start", func(i int) bool { return i < 8 }, 500, true},
		{"15 of 64 answered 429", func(i int) bool { return i >= 100 && i < 115 }, 500, false},
		{"16 of 64 answered 429", func(i int) bool { return i >= 100 && i < 116 }, 500, true},
		{"half of the attempts 429", func(i int) bool { return i%2 == 0 }, 100, true},
		{"every attempt 429", func(int) bool { return true }, 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newController(64, 0, 0)
			now := time.Now()
			for i := range tt.n {
				o := outcomeOK
				if tt.is429(i) {
					o = outcomeRateLimited
				}
				c.record(0, o, now)
			}
			if lowered := c.currentLimit() < 64; lowered != tt.lowered {
				t.Errorf("lowered = %v (limit %d, reason %q), want %v", lowered, c.currentLimit(), c.lowered, tt.lowered)
			}
		})
	}
}

func TestControllerWaitersAreServedInOrder(t *testing.T) {
	c := newController(1, 0, 0)
	if _, err := c.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if _, err := c.acquire(t.Context()); err == nil {
				order <- i
				c.release()
			}
		}()
		for {
			c.mu.Lock()
			n := c.waiters.Len()
			c.mu.Unlock()
			if n == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	c.release()
	for want := range 3 {
		if got := <-order; got != want {
			t.Errorf("waiter %d served in place %d", got, want)
		}
	}
}

// TestTokenLimiterRefund pins the x/time/rate behaviour settle relies on:
// ReserveN with a negative count puts tokens back.
func TestTokenLimiterRefund(t *testing.T) {
	c := newController(4, 0, 6000) // 100 tokens/s, burst 6000
	r, err := c.waitRate(t.Context(), 6000)
	if err != nil || r.configured != 6000 {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	if tok := c.tpm.Tokens(); tok > 50 {
		t.Fatalf("after reserving the burst, %v tokens left", tok)
	}
	c.settle(r, 1000)
	if tok := c.tpm.Tokens(); tok < 4900 || tok > 5100 {
		t.Errorf("after settling 6000 reserved against 1000 used: %v tokens, want ~5000", tok)
	}
	r, _ = c.waitRate(t.Context(), 1000)
	c.settle(r, 3000)
	if tok := c.tpm.Tokens(); tok > 2100 {
		t.Errorf("after using 2000 more than reserved: %v tokens, want ~2000", tok)
	}
	// Oversized estimates are capped at the burst instead of failing.
	c2 := newController(1, 0, 60)
	if r, err := c2.waitRate(t.Context(), 1e6); err != nil || r.configured != 60 {
		t.Errorf("oversized estimate: %+v %v", r, err)
	}
}

func TestMinuteCounter(t *testing.T) {
	var m minuteCounter
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 90 {
		m.add(t0.Add(time.Duration(i) * time.Second)) // one a second for 90s
	}
	now := t0.Add(89 * time.Second)
	if got := m.lastMinute(now); got != 60 {
		t.Errorf("last minute at 89s: %d, want 60", got)
	}
	if got := m.lastMinute(now.Add(30 * time.Second)); got != 30 {
		t.Errorf("30s later: %d, want 30", got)
	}
	if got := m.lastMinute(now.Add(time.Hour)); got != 0 {
		t.Errorf("an hour later: %d, want 0", got)
	}
}

// TestBurstCountsUnansweredAttempts: a 429 comes back at once and a success
// only after the latency, so an epoch's first answers are mostly its 429s;
// attempts still in flight count as sent, not as 429s, while the window has
// room. A server refusing everything is still recognized within 16.
func TestBurstCountsUnansweredAttempts(t *testing.T) {
	fill := func(hits, n int) *window429 {
		var w window429
		for i := range n {
			w.add(i < hits)
		}
		return &w
	}
	for _, tc := range []struct {
		name          string
		hits, n, pend int
		want          bool
	}{
		{"8 early 429s of 16 answers, 48 still in flight", 8, 16, 48, false},
		{"8 429s of 16 attempts, nothing else in flight", 8, 16, 0, true},
		{"a refusing server: 16 of 16 answers, 48 in flight", 16, 16, 48, true},
		{"a full window: in flight changes nothing", 16, 64, 64, true},
		{"a full window below a quarter", 15, 64, 0, false},
	} {
		if got := fill(tc.hits, tc.n).burst(tc.pend); got != tc.want {
			t.Errorf("%s: burst = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAdmissionKeptOnlyByItsOwnEndpoint: a problem admitted by the rollout
// endpoint's client may send its later stages to another endpoint; those
// attempts keep none of the admission's promise, which belongs to the
// first controller (and its lock: touching it under the other's was a
// data race).
func TestAdmissionKeptOnlyByItsOwnEndpoint(t *testing.T) {
	rollout, judge := newController(4, 0, 0), newController(4, 0, 0)
	a, err := rollout.admit(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), admissionKey{}, a)
	if _, err := judge.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	judge.release()
	rollout.mu.Lock()
	promised := rollout.promised
	rollout.mu.Unlock()
	if promised != 2 || a.left.Load() != 2 {
		t.Fatalf("after an attempt to another endpoint: promised %d, left %d; want 2 and 2", promised, a.left.Load())
	}
	if _, err := rollout.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	rollout.release()
	if a.left.Load() != 1 {
		t.Fatalf("an attempt to its own endpoint kept %d of 2", 2-a.left.Load())
	}
	a.settle()
}
