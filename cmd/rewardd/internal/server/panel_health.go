package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rubricforge/rubricforge/reward/judge"
)

// With a panel of judges the server's breaker and health see the panel's
// outcome, which stays good while one judge answers: a member that is
// down, answers garbage or hangs would be nearly invisible (every response
// floored where it decides, judge_ok true, /healthz ok) and a hung one
// would hold every request until the judge timeout. So each member has a
// breaker of its own and a record of its last minute (memberGuard, its
// judge.Guard), the panel cuts off a member that has not answered
// --judge-member-deadline after another did (judge.ErrMemberLate, an
// outage for its breaker), and /healthz and /metrics name each member's
// state.

// memberGuard is one panel judge's circuit breaker and last minute of
// calls, put before its calls as its judge.Guard.
type memberGuard struct {
	name    string
	breaker *breaker
	recent  window // calls and failed calls, last minute
}

func newMemberGuard(name string, opt BreakerOptions) *memberGuard {
	return &memberGuard{name: name, breaker: newBreaker(opt)}
}

// Allow lets a call to the judge through while its breaker does; done
// records the call's outcome. A refused call counts as a failed one; a
// call whose caller went away counts as nothing.
func (g *memberGuard) Allow() (func(ctx context.Context, err error), error) {
	call, err := g.breaker.allow(time.Now())
	if err != nil {
		g.recent.add(time.Now(), 1, 1)
		return nil, err
	}
	return func(ctx context.Context, err error) {
		now := time.Now()
		g.breaker.record(ctx, now, call, err)
		if err != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return // the request went away: no news of the judge
		}
		failed := int64(0)
		if err != nil {
			failed = 1
		}
		g.recent.add(now, 1, failed)
	}, nil
}

// guardMembers gives each judge of the panel j (none for a single judge)
// its own guard, and the panel its member deadline.
func guardMembers(j *judge.Judge, opt BreakerOptions, deadline time.Duration) []*memberGuard {
	members := j.Members()
	if len(members) == 0 {
		return nil
	}
	j.SetMemberDeadline(deadline)
	guards := make([]*memberGuard, len(members))
	for i, m := range members {
		guards[i] = newMemberGuard(m.Name(), opt)
		m.SetGuard(guards[i])
	}
	return guards
}

// memberHealth is each panel judge's state for /healthz, and why each that
// is not well makes the server degraded: its breaker is not closed, or
// more than degradedRate of its last minute's calls failed.
func (s *Server) memberHealth(now time.Time) (judges []map[string]any, degraded []string) {
	for _, g := range s.members {
		b := g.breaker.status()
		n, failed := g.recent.counts(now)
		ratio := 0.0
		if n > 0 {
			ratio = float64(failed) / float64(n)
		}
		m := map[string]any{"name": g.name, "breaker": b.State, "failure_ratio_1m": ratio, "judged_1m": n}
		if b.Reason != "" {
			m["cause"] = b.Reason
		}
		judges = append(judges, m)
		switch {
		case b.State != breakerClosed:
			degraded = append(degraded, fmt.Sprintf("judge %s: circuit breaker %s (not asked; its vote counts against the response)", g.name, b.State))
		case ratio > degradedRate:
			degraded = append(degraded, fmt.Sprintf("judge %s: %d of its %d calls in the last minute failed (each a vote against the response)", g.name, failed, n))
		}
	}
	return judges, degraded
}

// writeMemberMetrics writes each panel judge's breaker state and recent
// failure ratio (nothing for a single judge).
func (s *Server) writeMemberMetrics(w io.Writer) {
	if len(s.members) == 0 {
		return
	}
	now := time.Now()
	help(w, "rewardd_panel_judge_breaker_state", "gauge", "Each panel judge's own circuit breaker: 1 for its state (closed, open: not asked, fatal: it refuses rewardd).")
	for _, g := range s.members {
		st := g.breaker.status().State
		for _, state := range []string{breakerClosed, breakerOpen, breakerFatal} {
			fmt.Fprintf(w, "rewardd_panel_judge_breaker_state{judge=%q,state=%q} %g\n", g.name, state, b2f(st == state))
		}
	}
	help(w, "rewardd_panel_judge_failure_ratio", "gauge", "Each panel judge's failed calls over its calls in the last minute (refused by its breaker and cut off by --judge-member-deadline included).")
	for _, g := range s.members {
		n, failed := g.recent.counts(now)
		ratio := 0.0
		if n > 0 {
			ratio = float64(failed) / float64(n)
		}
		fmt.Fprintf(w, "rewardd_panel_judge_failure_ratio{judge=%q} %g\n", g.name, ratio)
	}
}
