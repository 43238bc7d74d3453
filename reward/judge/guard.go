package judge

import (
	"context"
	"fmt"
	"time"
)

// A Guard stands before a judge's calls to its endpoint, as a circuit
// breaker does: Allow reports whether a call may go now (its error, when
// not, stands for the judge's answer) and returns done, which takes the
// call's context and outcome. A verdict served from memory passes no
// guard. rewardd gives each judge of a panel its own (SetGuard), so that a
// member that is down or hangs stops being asked while the others answer.
type Guard interface {
	Allow() (done func(ctx context.Context, err error), err error)
}

// SetGuard puts g before j's calls to its endpoint (nil: none). Set it
// before j is used.
func (j *Judge) SetGuard(g Guard) { j.guard = g }

// SetMemberDeadline bounds, for a panel, how long it waits for a member
// once another member has answered (0: no bound but the caller's
// context): a member not in by then is cut off, its call ended with
// ErrMemberLate, and counts as failed, a vote against the response (the
// fail-closed rule). Set it before the panel is used; it does nothing for
// a single judge.
func (j *Judge) SetMemberDeadline(d time.Duration) { j.memberDeadline = d }

// guarded runs call through j's guard, if it has one; a call the guard
// refuses counts as a call and a failure of j.
func (j *Judge) guarded(ctx context.Context, call func() error) error {
	if j.guard == nil {
		return call()
	}
	done, err := j.guard.Allow()
	if err != nil {
		j.calls.Add(1)
		j.failures.Add(1)
		return fmt.Errorf("judge %s not asked: %w", j.opt.Name, err)
	}
	err = call()
	done(ctx, err)
	return err
}
