package pipeline

import (
	"context"
	"maps"

	"github.com/rubricforge/rubricforge/schema"
)

// Pilot is what a run lets distill plan's pilot (package plan) do: choose
// the problems it takes and watch each one from start to end. Options.Pilot
// is nil for every run but a plan's.
type Pilot interface {
	// Holds reports whether the run takes problem id: the pilot's sample,
	// applied with the job's partition.
	Holds(id string) bool
	// Len is the number of problems the sample holds.
	Len() int
	// Start returns the context a problem's requests are sent with.
	Start(ctx context.Context, id string) context.Context
	// End is told how a problem that started ended.
	End(ProblemEnd)
}

// ProblemEnd is how one problem ended, as a Pilot hears it.
type ProblemEnd struct {
	ID, Source string
	// Record is the record it made; nil when it made none.
	Record *schema.Record
	// FailedStage is the stage it failed at or was left out by; "" when
	// it made a record or the run's end left it pending.
	FailedStage string
	// Pending is true when the run ended before the problem did.
	Pending bool
	// Stages is what its requests cost, by stage, answers read from the
	// cache included (see usage.add); CachedPrompt the prompt tokens of
	// those answers that the server's prefix cache reused, by stage.
	Stages       map[string]schema.Usage
	CachedPrompt map[string]int64
}

// StopPlan is report.json's stopped_by after a plan's pilot: the sampled
// problems are done, the rest is for distill run.
const StopPlan = "plan"

// endOf is the ProblemEnd of an outcome.
func endOf(o outcome) ProblemEnd {
	e := ProblemEnd{ID: o.problem.ID, Source: o.problem.Source, Record: o.record, Stages: map[string]schema.Usage{}}
	switch {
	case o.failure != nil:
		e.FailedStage = o.failure.stage
	case o.record == nil:
		e.Pending = true
	}
	if o.usage != nil {
		o.usage.mu.Lock()
		for stage, u := range o.usage.byStage {
			e.Stages[stage] = u
		}
		if len(o.usage.cachedByStage) > 0 {
			e.CachedPrompt = maps.Clone(o.usage.cachedByStage)
		}
		o.usage.mu.Unlock()
	}
	return e
}
