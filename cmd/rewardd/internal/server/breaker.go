package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward/judge"
)

// Breaker states, as /healthz and /metrics name them.
const (
	breakerClosed = "closed" // calls go to the judge
	breakerOpen   = "open"   // the judge is down: calls fail at once, one probe now and then
	breakerFatal  = "fatal"  // the judge refuses us (401, 403, insufficient_quota): calls fail at once, one probe now and then
)

// BreakerOptions tune the judge's circuit breaker.
type BreakerOptions struct {
	// Failures is how many judge calls in a row must end in an outage
	// (timeout, refused or reset connection, 5xx or 429 after every retry)
	// before the breaker opens (default 5).
	Failures int
	// Probe is how long the breaker stays open before one call is let
	// through to probe the judge (default 5s); it doubles after each failed
	// probe, up to 1 minute.
	Probe time.Duration
}

// breaker stops sending verdict calls to a judge that is down, so that a
// request is answered with the judge-failure policy at once instead of
// after --judge-timeout: after Failures outages in a row it opens, and
// lets one call through every Probe to see whether the judge is back; a
// call that gets any answer closes it. A fatal refusal (401, 403, 404, an
// exhausted quota) opens it as fatal, which only a successful probe ends.
// It is safe for concurrent use.
type breaker struct {
	opt BreakerOptions

	mu        sync.Mutex
	state     string
	inARow    int           // outages in a row while closed
	wait      time.Duration // the current probe interval
	nextProbe time.Time
	probing   bool
	reason    string // the error that opened it
	since     time.Time
	opened    int64 // times it opened
	epoch     int64 // times it closed again
}

func newBreaker(opt BreakerOptions) *breaker {
	if opt.Failures <= 0 {
		opt.Failures = 5
	}
	if opt.Probe <= 0 {
		opt.Probe = 5 * time.Second
	}
	return &breaker{opt: opt, state: breakerClosed}
}

// maxProbeWait caps the probe interval.
const maxProbeWait = time.Minute

// breakerCall is a call allow let through: whether it is the probe, and
// the breaker's epoch (how many times it closed again) when it was let
// through.
type breakerCall struct {
	probe bool
	epoch int64
}

// allow reports whether a call may go to the judge, and if not the error
// that stands for its verdict.
func (b *breaker) allow(now time.Time) (breakerCall, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerClosed {
		return breakerCall{epoch: b.epoch}, nil
	}
	if !b.probing && !now.Before(b.nextProbe) {
		b.probing = true
		return breakerCall{probe: true, epoch: b.epoch}, nil
	}
	what := "the judge is unreachable"
	if b.state == breakerFatal {
		what = "the judge refuses rewardd (fix the key, the model or the quota)"
	}
	return breakerCall{}, fmt.Errorf("%s: circuit breaker %s since %s, not asked; next probe in %s; cause: %s",
		what, b.state, b.since.UTC().Format(time.RFC3339), max(0, b.nextProbe.Sub(now)).Round(time.Second), b.reason)
}

// record takes the outcome of a call allow let through; ctx is the call's.
// The outage of a call let through before the breaker last closed is old
// news (the judge was found back since) and is ignored.
func (b *breaker) record(ctx context.Context, now time.Time, call breakerCall, err error) {
	kind := outageKind(ctx, err)
	b.mu.Lock()
	defer b.mu.Unlock()
	if call.probe {
		b.probing = false
	}
	switch {
	case kind == "":
		if call.probe && err != nil && errors.Is(err, context.Canceled) {
			return // the caller went away: no news of the judge
		}
		if b.state != breakerClosed {
			b.epoch++
		}
		b.state, b.inARow, b.wait, b.reason = breakerClosed, 0, 0, ""
	case call.epoch == b.epoch:
		b.outage(now, call.probe, kind, err)
	}
}

// outage takes an outage or a refusal (kind breakerOpen or breakerFatal).
// While closed, a refusal or Failures outages in a row open the breaker; a
// failed probe doubles the probe interval. The outcome of a call let
// through before the breaker opened is old news: it leaves the interval and
// the next probe alone (else one batch in flight would push the interval to
// its cap), and only a refusal changes the state to fatal.
func (b *breaker) outage(now time.Time, probe bool, kind string, err error) {
	switch {
	case b.state == breakerClosed:
		if kind == breakerOpen {
			b.inARow++
			if b.inARow < b.opt.Failures {
				return
			}
		}
		b.opened++
		b.since, b.wait = now, b.opt.Probe
		b.state, b.reason, b.nextProbe = kind, err.Error(), now.Add(b.wait)
	case probe:
		b.wait = min(2*b.wait, maxProbeWait)
		b.state, b.reason, b.nextProbe = kind, err.Error(), now.Add(b.wait)
	case kind == breakerFatal:
		b.state, b.reason = kind, err.Error()
	}
}

// outageKind sorts a verdict call's outcome: breakerOpen for an outage of
// the judge, breakerFatal for a refusal that no retry passes, "" for an
// answer (verdicts, or a reply that did not parse: the judge is up), a
// caller that went away, or a call that timed out before anything was sent
// (waiting for a slot behind a large batch says nothing about the judge).
func outageKind(ctx context.Context, err error) string {
	if err != nil && errors.Is(context.Cause(ctx), judge.ErrMemberLate) {
		return breakerOpen // a panel judge cut off at the member deadline: it hangs
	}
	var e *llm.Error // only the endpoint's own failures
	if err == nil || !errors.As(err, &e) {
		return ""
	}
	switch {
	case e.Class == llm.ClassRetryable:
		return breakerOpen
	case e.Class == llm.ClassFatal:
		return breakerFatal
	case e.Class == llm.ClassCanceled && e.Attempts > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return breakerOpen // the judge timeout ended an attempt in flight: the judge hangs
	}
	return ""
}

// breakerStatus is the breaker's state for /healthz and /metrics.
type breakerStatus struct {
	State  string
	Reason string
	Opened int64
}

func (b *breaker) status() breakerStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return breakerStatus{State: b.state, Reason: b.reason, Opened: b.opened}
}

// degradedRate is the judge-failure ratio of the last minute above which
// /healthz reports degraded, however few judgments were made.
const degradedRate = 0.2

// healthz answers GET /healthz: 200 "ok"; 200 "degraded" while the breaker
// is open, more than degradedRate of the last minute's judgments failed
// (the stalled calls of a hung judge counted as failed: answers are then
// at the failure policy), or a judge of a panel is not well (its own
// breaker not closed, or more than degradedRate of its calls failed: its
// votes go against the responses), "degraded" saying why and "judges"
// giving each panel judge's state; 503 "unhealthy" while the judge
// refuses rewardd (401, 403, an exhausted quota: no answer is judged
// until that is fixed). Degraded answers 200 because rewardd still answers
// every request, at the failure policy where it must: a readiness or
// liveness probe that took it out of service would turn floored rewards
// into refused connections. With strict (?strict=1, for a monitor that
// alerts on the status code) degraded answers 503.
func (s *Server) healthz(w http.ResponseWriter, strict bool) {
	now := time.Now()
	b := s.breaker.status()
	jh := s.judgeHealth(now)
	members, degraded := s.memberHealth(now)
	switch {
	case b.State == breakerOpen:
		degraded = append([]string{"the judge's circuit breaker is open (answers at the failure policy)"}, degraded...)
	case jh.ratio() > degradedRate:
		degraded = append([]string{fmt.Sprintf("%d of the %d judgments of the last minute failed", jh.failed, jh.judged)}, degraded...)
	}
	status, code := "ok", http.StatusOK
	switch {
	case b.State == breakerFatal:
		status, code = "unhealthy", http.StatusServiceUnavailable
	case len(degraded) > 0:
		status = "degraded"
		if strict {
			code = http.StatusServiceUnavailable
		}
	}
	judge := map[string]any{"breaker": b.State, "failure_ratio_1m": jh.ratio(), "judged_1m": jh.judged, "stalled_calls": jh.stalled}
	if b.Reason != "" {
		judge["cause"] = b.Reason
	}
	out := map[string]any{"ok": code == http.StatusOK, "status": status, "records": s.records(), "judge": judge}
	if len(degraded) > 0 {
		out["degraded"] = degraded
	}
	if members != nil {
		out["judges"] = members
	}
	writeJSON(w, code, out)
}

// judgeHealth is the last minute's judgments, with the stalled calls
// counted as judged and failed.
func (s *Server) judgeHealth(now time.Time) judgeHealth {
	n, failed := s.m.judged.counts(now)
	stalled := s.calls.stalled(now, s.cfg.StallAfter)
	return judgeHealth{judged: n + stalled, failed: failed + stalled, stalled: stalled}
}
