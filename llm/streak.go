package llm

import "errors"

// Streak follows the calls in a row that failed because of the endpoint
// rather than the request: calls that ran out of retries on transient
// errors, and among those the ones whose last attempt could not connect at
// all. A caller that makes many calls (a run, a rejudge) stops when either
// streak grows long: nothing listens at the URL, or the endpoint keeps
// failing. One Streak serves one caller's loop; it is not safe for
// concurrent use.
type Streak struct {
	failing     int // calls in a row that ran out of retries on transient errors
	unreachable int // of those, the last ones in a row that could not connect
}

// Limits of a Streak.
const (
	// FailingStreakLimit is how many calls in a row may run out of retries
	// on transient errors before the caller stops.
	FailingStreakLimit = 50
	// UnreachableStreakLimit is how many calls in a row may fail because no
	// connection could be made before the caller stops: nothing listens.
	UnreachableStreakLimit = 3
)

// StreakVerdict is what a Streak says after a failure.
type StreakVerdict int

const (
	StreakGoOn        StreakVerdict = iota // keep going
	StreakUnreachable                      // UnreachableStreakLimit calls in a row could not connect
	StreakFailing                          // FailingStreakLimit calls in a row ran out of retries
)

// Reset records a call the endpoint answered: a success, or a failure that
// is about the request (a permanent error, a reply that never parsed).
func (s *Streak) Reset() { *s = Streak{} }

// Failed records a call that ran out of retries on a transient error whose
// reason (Error.Reason) was reason, and says whether to stop.
func (s *Streak) Failed(reason string) StreakVerdict {
	s.failing++
	if Unreachable(reason) {
		s.unreachable++
	} else {
		s.unreachable = 0
	}
	switch {
	case s.unreachable >= UnreachableStreakLimit:
		return StreakUnreachable
	case s.failing >= FailingStreakLimit:
		return StreakFailing
	}
	return StreakGoOn
}

// Observe records the error of a finished call (nil for a success): a
// retryable one lengthens the streak, anything else resets it.
func (s *Streak) Observe(err error) StreakVerdict {
	if err == nil || ClassOf(err) != ClassRetryable {
		s.Reset()
		return StreakGoOn
	}
	return s.Failed(ReasonOf(err))
}

// Unreachable reports whether an error reason means no connection could be
// made: refused, or a network error before any answer.
func Unreachable(reason string) bool { return reason == "refused" || reason == "network" }

// Len is how many calls in a row failed on transient errors.
func (s *Streak) Len() int { return s.failing }

// ReasonOf is the short reason of an error from Chat ("refused", "429",
// "timeout", ...), "" for other errors.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}
