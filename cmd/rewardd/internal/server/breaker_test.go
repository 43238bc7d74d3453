package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// switchable is a judge transport whose failure mode a test sets: "" passes
// to the simulated endpoint, "refuse" fails like a dead server, "401" and
// "quota" answer as OpenAI does to a bad key and an exhausted quota.
type switchable struct {
	next  http.RoundTripper
	mu    sync.Mutex
	mode  string
	calls int
}

func (s *switchable) wrap(next http.RoundTripper) http.RoundTripper { s.next = next; return s }

func (s *switchable) set(mode string) { s.mu.Lock(); s.mode = mode; s.mu.Unlock() }

func (s *switchable) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

func (s *switchable) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.calls++
	mode := s.mode
	s.mu.Unlock()
	answer := func(code int, body string) (*http.Response, error) {
		return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d", code), Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r, ContentLength: int64(len(body))}, nil
	}
	switch mode {
	case "refuse":
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: syscall.ECONNREFUSED.Error()}}
	case "401":
		return answer(401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	case "quota":
		return answer(429, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`)
	}
	return s.next.RoundTrip(r)
}

func scoreOne(t *testing.T, h *harness, i int) reward.Result {
	t.Helper()
	return scoreVia(t, h, pathV1Score, distinctMarked(i))
}

func healthStatus(t *testing.T, h *harness) (int, string) {
	t.Helper()
	code, out := h.do(http.MethodGet, "/healthz", "")
	return code, string(out)
}

// TestBreakerOpensOnOutages checks the circuit breaker, on /v1/score and
// the adapters' routes: after Failures
// verdict calls in a row end in an outage, requests are answered at the
// floor without asking the judge, /healthz says degraded, and a probe that
// gets an answer closes it again.
func TestBreakerOpensOnOutages(t *testing.T) {
	t.Parallel()
	for _, route := range scoreRoutes {
		t.Run(route, func(t *testing.T) { breakerOpensOnOutages(t, route) })
	}
}

func breakerOpensOnOutages(t *testing.T, route string) {
	scoreOne := func(t *testing.T, h *harness, i int) reward.Result {
		t.Helper()
		return scoreVia(t, h, route, distinctMarked(i))
	}
	sw := &switchable{}
	h := newHarnessVia(t, []schema.Label{rewardtest.DemoLabel()}, sw.wrap, func(c *Config, _ *sim.Config) {
		c.Breaker = BreakerOptions{Failures: 3, Probe: time.Millisecond}
	})
	sw.set("refuse")
	for i := range 3 {
		if r := scoreOne(t, h, i); r.JudgeOK || !strings.Contains(r.JudgeError, "HTTP") && !strings.Contains(r.JudgeError, "retryable") {
			t.Errorf("call %d while the judge is down: %+v", i, r)
		}
	}
	sent := sw.count()
	// A probe is due after 1ms; keep it failing, so the breaker stays open
	// and answers every request but the probes at once.
	for i := 3; i < 10; i++ {
		r := scoreOne(t, h, i)
		if r.JudgeOK || !rewardtest.Near(r.Reward, 0) {
			t.Errorf("call %d with the breaker open: %+v; want judge_ok false at the floor 0", i, r)
		}
	}
	if code, out := healthStatus(t, h); code != http.StatusOK || !strings.Contains(out, `"status":"degraded"`) || !strings.Contains(out, `"breaker":"open"`) {
		t.Errorf("/healthz with the breaker open: %d %s", code, out)
	}
	open := 0
	for i := 10; i < 20; i++ {
		if r := scoreOne(t, h, i); strings.Contains(r.JudgeError, "circuit breaker open") {
			open++
		}
	}
	if open == 0 || sw.count()-sent >= 4*17 {
		t.Errorf("%d of 10 answers from the open breaker; the endpoint got %d more calls; want most answered without it", open, sw.count()-sent)
	}
	_, m := h.do(http.MethodGet, "/metrics", "")
	if !strings.Contains(string(m), `rewardd_judge_breaker_state{state="open"} 1`) || !strings.Contains(string(m), "rewardd_judge_failure_ratio 1\n") {
		t.Errorf("/metrics does not show the open breaker and the failure ratio 1")
	}

	sw.set("")
	// The next probe is due within the probe interval (it doubled from 1ms
	// with every failed probe, at most maxProbeWait).
	deadline := time.Now().Add(maxProbeWait + 10*time.Second)
	for i := 100; !scoreOne(t, h, i).JudgeOK; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no probe closed the breaker after the judge came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := scoreOne(t, h, 101); !r.JudgeOK {
		t.Errorf("after the probe: %+v", r)
	}
	if code, out := healthStatus(t, h); code != http.StatusOK || !strings.Contains(out, `"breaker":"closed"`) {
		t.Errorf("/healthz after the judge came back: %d %s", code, out)
	}
}

// TestJudgeRefusalIsFatal checks a judge that refuses rewardd (a bad key,
// an exhausted quota): not retried, /healthz unhealthy, every answer says
// so.
func TestJudgeRefusalIsFatal(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"401", "quota"} {
		sw := &switchable{}
		h := newHarnessVia(t, []schema.Label{rewardtest.DemoLabel()}, sw.wrap, func(c *Config, _ *sim.Config) {
			c.Breaker = BreakerOptions{Failures: 3, Probe: time.Hour}
		})
		sw.set(mode)
		first := scoreOne(t, h, 0)
		if sw.count() != 1 || first.JudgeOK {
			t.Errorf("%s: %d calls to the endpoint, result %+v; want one, not retried", mode, sw.count(), first)
		}
		for i := 1; i < 4; i++ {
			if r := scoreOne(t, h, i); !strings.Contains(r.JudgeError, "the judge refuses rewardd") || r.JudgeOK {
				t.Errorf("%s: answer %d: %q; want it to say the judge refuses rewardd", mode, i, r.JudgeError)
			}
		}
		if sw.count() != 1 {
			t.Errorf("%s: the endpoint got %d calls; want none after the refusal", mode, sw.count())
		}
		if code, out := healthStatus(t, h); code != http.StatusServiceUnavailable || !strings.Contains(out, `"status":"unhealthy"`) {
			t.Errorf("%s: /healthz %d %s; want 503 unhealthy", mode, code, out)
		}
	}
}

// TestOutageKind: only the endpoint's failures open the breaker; a reply
// that did not parse, a caller gone, or a timeout spent waiting for a slot
// behind a large batch say nothing about the judge.
func TestOutageKind(t *testing.T) {
	t.Parallel()
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	gone, stop := context.WithCancel(context.Background())
	stop()
	live := context.Background()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"answered", live, nil, ""},
		{"refused after retries", live, &llm.Error{Class: llm.ClassRetryable, Attempts: 4, Reason: "refused"}, breakerOpen},
		{"bad key", live, &llm.Error{Class: llm.ClassFatal, Attempts: 1, Status: 401}, breakerFatal},
		{"reply did not parse", live, &llm.ParseError{What: "satisfaction verdicts", Attempts: 3, Err: errors.New("no JSON")}, ""},
		{"an attempt cut by the judge timeout", expired, &llm.Error{Class: llm.ClassCanceled, Attempts: 1}, breakerOpen},
		{"timed out waiting for a slot", expired, fmt.Errorf("waiting for a judge slot: %w", context.DeadlineExceeded), ""},
		{"timed out before sending", expired, &llm.Error{Class: llm.ClassCanceled, Attempts: 0}, ""},
		{"the caller went away", gone, &llm.Error{Class: llm.ClassCanceled, Attempts: 1}, ""},
	} {
		if got := outageKind(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBreakerProbeIntervalDoublesOnlyOnFailedProbes: the outages of calls
// already in flight when the breaker opened (a whole batch at a dead judge)
// are known news and leave the probe interval alone; only a failed probe
// doubles it. Before, each such outage doubled it, so one batch in flight
// pushed it to the 1-minute cap and the breaker stayed open about a minute
// after the judge came back.
func TestBreakerProbeIntervalDoublesOnlyOnFailedProbes(t *testing.T) {
	t.Parallel()
	outage := &llm.Error{Class: llm.ClassRetryable, Attempts: 4, Reason: "connection refused"}
	refusal := &llm.Error{Class: llm.ClassFatal, Attempts: 1, Status: 401}
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	const probe = 5 * time.Second
	for _, tc := range []struct {
		name          string
		inFlight      int           // outages of calls admitted before it opened, recorded after
		failedProbes  int           // probes that failed after that
		wantNextProbe time.Duration // after it opened or the last failed probe, when the next probe is let through
		wantState     string
	}{
		{"opened, nothing else", 0, 0, probe, breakerOpen},
		{"a batch of 500 in flight", 500, 0, probe, breakerOpen},
		{"one failed probe", 0, 1, 2 * probe, breakerOpen},
		{"in flight, then two failed probes", 500, 2, 4 * probe, breakerOpen},
		{"failed probes up to the cap", 0, 10, maxProbeWait, breakerOpen},
	} {
		b := newBreaker(BreakerOptions{Failures: 3, Probe: probe})
		now := t0
		for range 3 {
			c, err := b.allow(now)
			if c.probe || err != nil {
				t.Fatalf("%s: a closed breaker refused a call: %v", tc.name, err)
			}
			b.record(ctx, now, c, outage)
		}
		last := now
		for range tc.inFlight {
			now = now.Add(time.Millisecond)
			b.record(ctx, now, breakerCall{}, outage) // let through before it opened
		}
		for range tc.failedProbes {
			now = b.nextProbe
			c, err := b.allow(now)
			if !c.probe || err != nil {
				t.Fatalf("%s: no probe at %s: %v", tc.name, now.Sub(t0), err)
			}
			b.record(ctx, now, c, outage)
			last = now
		}
		if c, _ := b.allow(last.Add(tc.wantNextProbe - time.Millisecond)); c.probe {
			t.Errorf("%s: a probe was let through before %s", tc.name, tc.wantNextProbe)
		}
		if c, err := b.allow(last.Add(tc.wantNextProbe)); !c.probe {
			t.Errorf("%s: no probe %s after it opened or the last failed probe: %v", tc.name, tc.wantNextProbe, err)
		}
		if st := b.status().State; st != tc.wantState {
			t.Errorf("%s: state %s, want %s", tc.name, st, tc.wantState)
		}
	}

	// A refusal from a call in flight still makes the open breaker fatal
	// (it says more than the outage), without moving the next probe.
	b := newBreaker(BreakerOptions{Failures: 1, Probe: probe})
	b.record(ctx, t0, breakerCall{}, outage)
	b.record(ctx, t0.Add(time.Second), breakerCall{}, refusal)
	if st := b.status().State; st != breakerFatal {
		t.Errorf("a refusal while open: state %s, want fatal", st)
	}
	if c, _ := b.allow(t0.Add(probe)); !c.probe {
		t.Errorf("a refusal from a call in flight moved the next probe")
	}
}

// TestBreakerIgnoresOutagesFromBeforeItClosed: calls let through before a
// probe found the judge back, and failed at the dead judge, end after it
// closed; they are old news and do not open it again.
func TestBreakerIgnoresOutagesFromBeforeItClosed(t *testing.T) {
	t.Parallel()
	outage := &llm.Error{Class: llm.ClassRetryable, Attempts: 4, Reason: "connection refused"}
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	b := newBreaker(BreakerOptions{Failures: 3, Probe: 5 * time.Second})
	var old []breakerCall
	for range 10 { // a batch at the judge when it dies
		c, err := b.allow(now)
		if err != nil {
			t.Fatal(err)
		}
		old = append(old, c)
	}
	for _, c := range old[:3] {
		b.record(ctx, now, c, outage)
	}
	if st := b.status().State; st != breakerOpen {
		t.Fatalf("state %s after 3 outages, want open", st)
	}
	now = now.Add(5 * time.Second)
	probe, err := b.allow(now)
	if err != nil || !probe.probe {
		t.Fatalf("no probe: %v", err)
	}
	b.record(ctx, now, probe, nil) // the judge is back
	for _, c := range old[3:] {
		b.record(ctx, now, c, outage)
	}
	if st := b.status().State; st != breakerClosed {
		t.Errorf("state %s after the old calls' outages, want closed: they were let through before it closed", st)
	}
	fresh, _ := b.allow(now)
	for range 3 { // new outages still open it
		b.record(ctx, now, fresh, outage)
	}
	if st := b.status().State; st != breakerOpen {
		t.Errorf("state %s after 3 new outages, want open", st)
	}
}
