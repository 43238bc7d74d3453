package llm

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestLearnedDeadline(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		samples   []time.Duration
		cuts      int
		want      time.Duration
		wantLearn bool
	}{
		{"too few samples: the ceiling", repeat(100*ms, minLatencySamples-1), 0, time.Minute, false},
		{"enough: 3 x the 99th percentile", repeat(100*ms, minLatencySamples), 0, 300 * ms, true},
		{"never below the floor", repeat(10*ms, 100), 0, 200 * ms, true},
		{"never above the ceiling", repeat(50*time.Second, 100), 0, time.Minute, false},
		{"a tail moves it", append(repeat(100*ms, 198), 2*time.Second, 2*time.Second), 0, 6 * time.Second, true},
		{"one cut doubles it", repeat(100*ms, 50), 1, 600 * ms, true},
		{"three cuts", repeat(100*ms, 50), 3, 2400 * ms, true},
		{"doubling stops at the ceiling", repeat(100*ms, 50), 8, time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeadlines(200*ms, time.Minute)
			for _, s := range tt.samples {
				d.observe("rollout", s)
			}
			got, learned := d.forAttempt("rollout", tt.cuts)
			if got != tt.want || learned != tt.wantLearn {
				t.Errorf("deadline %v (learned %v), want %v (%v)", got, learned, tt.want, tt.wantLearn)
			}
			if other, learned := d.forAttempt("judge", 0); other != time.Minute || learned {
				t.Errorf("another stage got %v", other)
			}
		})
	}
	t.Run("a window, not all history", func(t *testing.T) {
		d := newDeadlines(10*ms, time.Hour)
		for _, s := range append(repeat(10*time.Second, 100), repeat(100*ms, latencyWindow)...) {
			d.observe("judge", s)
		}
		if got, _ := d.forAttempt("judge", 0); got != 300*ms {
			t.Errorf("after the slow samples left the window: %v, want 300ms", got)
		}
	})
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// TestLongRequestStillFinishes: once a stage has learned that its
// attempts take 100ms, an attempt that runs 2s is cut at the learned
// deadline and retried with the deadline doubled each time, so the long
// request finishes on its fourth attempt; the cuts count as timeouts.
// Runs in fake time (synctest), where the durations are exact.
func TestLongRequestStillFinishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var held []time.Duration // how long each attempt at the long request ran
		h := func(w http.ResponseWriter, r *http.Request) {
			d := 100 * time.Millisecond
			long := contentOf(r) == "long"
			if long {
				d = 2 * time.Second
			}
			start := time.Now()
			finished := hold(r, d)
			if long {
				mu.Lock()
				held = append(held, time.Since(start))
				mu.Unlock()
			}
			if finished {
				writeJSON(w, 200, okBody(1))
			}
		}
		meter := NewMeter(nil, Budget{})
		opt := fastOptions()
		opt.AttemptTimeout, opt.AttemptTimeoutFloor, opt.MaxAttempts = time.Minute, 200*time.Millisecond, 6
		c := newInProcessClient(t, h, opt, meter)
		for i := range 30 {
			if _, err := c.Chat(t.Context(), simpleRequest(fmt.Sprint("warm-up ", i))); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.Health().Deadlines["rollout"]; got != 300*time.Millisecond {
			t.Fatalf("learned deadline %v, want 300ms (3 x 100ms)", got)
		}
		resp, err := c.Chat(t.Context(), simpleRequest("long"))
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond, 2 * time.Second}
		if resp.Attempts != 4 || fmt.Sprint(held) != fmt.Sprint(want) {
			t.Errorf("attempts %d ran %v, want 4 running %v", resp.Attempts, held, want)
		}
		if n := meter.Snapshot().Total.ErrorsByReason["timeout"]; n != 3 {
			t.Errorf("timeouts counted %d, want 3", n)
		}
		if h := c.Health(); h.TimeoutsLastMinute != 3 || h.InFlightLimit != opt.MaxInFlight {
			t.Errorf("health %+v", h)
		}
	})
}
