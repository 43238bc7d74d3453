package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm"
)

// This file decides, in one place, whether something that happened to a
// problem stops the run: effectOf sorts errors, and verdict looks at each
// outcome together with the failures before it.

// effect is what an error means for the run.
type effect int

const (
	effectProblem  effect = iota // the problem fails and is recorded; the run goes on
	effectBudget                 // the budget is spent: stop feeding, stop cleanly (resumable)
	effectCanceled               // the run is stopping; the problem stays pending
	effectFatal                  // the run cannot go on (401, 403, 404, invalid requests)
	effectDeferred               // the problem's requests wait in batches; it stays pending
)

func effectOf(err error) effect {
	switch {
	case errors.Is(err, llm.ErrBudgetExhausted), llm.ClassOf(err) == llm.ClassBudget:
		return effectBudget
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), llm.ClassOf(err) == llm.ClassCanceled:
		return effectCanceled
	case llm.ClassOf(err) == llm.ClassDeferred:
		return effectDeferred
	}
	var le *llm.Error
	if errors.As(err, &le) && le.Class == llm.ClassFatal {
		return effectFatal
	}
	return effectProblem
}

// transientStreakLimit is how many problems in a row may run out of
// retries on transient endpoint errors before the run stops as failed.
const transientStreakLimit = llm.FailingStreakLimit

// health follows the failures in a row that point at the endpoint rather
// than at the problems (llm.Streak: the same rule validate rejudge keeps).
type health struct {
	streak llm.Streak
}

// action is what the loop does after an outcome.
type action struct {
	stopFeeding string // non-empty: stop taking new problems, for this reason
	stopCause   string // why, for report.json's stopped_by
	fatal       error  // non-nil: the run fails with this error
}

// verdict decides what an outcome means for the run. endpointOf names the
// endpoint of a stage, for messages.
func (h *health) verdict(o outcome, endpointOf func(stage string) string) action {
	switch {
	case o.err != nil:
		switch effectOf(o.err) {
		case effectBudget:
			return action{stopFeeding: "budget reached", stopCause: StopBudget}
		case effectCanceled:
			return action{}
		}
		return action{fatal: fmt.Errorf("problem %s: %w", o.problem.ID, o.err)}
	case o.record != nil:
		*h = health{}
	case o.failure != nil && !job.LeftOutStage(o.failure.stage):
		return h.failed(o.failure, endpointOf)
	}
	return action{}
}

func (h *health) failed(f *problemFailure, endpointOf func(stage string) string) action {
	if !f.transient {
		*h = health{} // the endpoint answered; the problem itself failed
		return action{}
	}
	switch h.streak.Failed(f.llmReason) {
	case llm.StreakUnreachable:
		return action{fatal: fmt.Errorf("nothing answers at %s: %d problems in a row could not connect (%s); is the server running, and is the base URL right? Finished work is kept; run again once the endpoint is up",
			endpointOf(f.stage), llm.UnreachableStreakLimit, f.reason)}
	case llm.StreakFailing:
		return action{fatal: fmt.Errorf("the endpoint keeps failing: %d problems in a row ran out of retries (last: %s); finished work is kept, and a plain resume retries these problems once the endpoint is back", h.streak.Len(), f.reason)}
	}
	return action{}
}
