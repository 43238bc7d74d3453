package llm

import (
	"fmt"
	"math"
)

// How the rows of a batch are priced against the budget. A row's
// completion tokens are unknown until it is answered; pricing each at its
// max_tokens stopped fresh runs before they sent anything (a 20,000-row
// batch priced at twenty times its real cost). So a stage's rows are
// priced, best first, from the run's own answers of the stage (the mean
// plus twice its standard error, once there are ownAnswers of them), else
// from distill plan's pilot (BatchOptions.PlanCompletion), else from an
// online pilot: the stage's first PilotRequests requests are sent online
// and the batch waits for their answers. A stage with none of these is
// priced at its rows' max_tokens. The estimate is made again each time a
// file is about to be submitted, for it and for every open batch.

// ownAnswers is how many answers of its own a stage needs before they
// price its rows ahead of a plan.
const ownAnswers = 20

// stagePilot counts the pilot requests of a stage: sent this session, and
// still waiting for their answers.
type stagePilot struct{ sent, inflight int }

// pilotRequest is the error that tells a Client to send a request itself,
// online, as one of its stage's pilot (see Options.Defer): done is called
// once it has its answer or failed.
type pilotRequest struct{ done func() }

func (p *pilotRequest) Error() string {
	return "llm: sent online, a pilot pricing its stage's batch rows"
}

// pilotLocked returns a pilotRequest when request r should go online to
// price its stage's rows, else nil: when nothing prices them yet, and its
// online price at its max_tokens fits the budget beside what is spent and
// what the open batches and pilots are expected to cost. Call with mu
// held.
func (b *Batcher) pilotLocked(r *DeferredRequest) *pilotRequest {
	limit, stage := b.meter.budget.MaxCostUSD, r.Stage
	if b.opt.PilotRequests <= 0 || b.opt.OfflineDir != "" || limit <= 0 || b.held != "" {
		return nil
	}
	if _, _, known := b.completionPriceLocked(stage); known {
		return nil
	}
	cost := b.meter.Cost(r.Model, int64(r.PromptTokens), int64(r.CompletionTokens))
	if b.projectedLocked(nil)+cost > limit {
		return nil // its row is priced at max_tokens, and the budget holds its batch back
	}
	p := b.pilots[stage]
	if p == nil {
		p = &stagePilot{}
		b.pilots[stage] = p
	}
	if p.sent >= b.opt.PilotRequests {
		return nil
	}
	if p.sent == 0 {
		b.log.Info("no estimate yet of how long this stage's answers are (no answers of the run, no plan.json of this job): "+
			"its first requests go online, at the online price, to price its batch rows against the budget", "stage", stage, "requests", b.opt.PilotRequests)
	}
	p.sent++
	p.inflight++
	b.pilotCost += cost
	return &pilotRequest{done: func() {
		b.mu.Lock()
		p.inflight--
		b.pilotCost -= cost
		b.mu.Unlock()
		b.signal(b.pilotDone)
	}}
}

// projectedLocked is what the run is expected to have cost once its open
// batches and pilot requests are answered: what it spent, and their
// estimates; but for batch except. Call with mu held.
func (b *Batcher) projectedLocked(except *BatchState) float64 {
	projected := b.meter.Spent() + b.pilotCost
	for _, o := range b.states {
		if o != except && (o.Phase == PhaseUploaded || o.Phase == PhaseSubmitted) {
			projected += b.estimateLocked(o)
		}
	}
	return projected
}

// journalLocked appends s to the journal and tells the meter's gate what
// the open batches are now expected to cost, so that online calls leave
// room for them. Call with mu held.
func (b *Batcher) journalLocked(s *BatchState) error {
	err := b.jr.append(s)
	b.commitLocked(0)
	return err
}

// commitLocked tells the meter's gate what the open batches are expected
// to cost, and extra (a file about to be submitted). Call with mu held.
func (b *Batcher) commitLocked(extra float64) {
	open := extra
	for _, o := range b.states {
		if o.Phase == PhaseUploaded || o.Phase == PhaseSubmitted {
			open += b.estimateLocked(o)
		}
	}
	b.meter.Gate().commit(open)
}

// pilotPending reports whether a stage of s has pilot requests waiting
// for their answers: the file waits for them before it is priced.
func (b *Batcher) pilotPending(s *BatchState) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for stage := range s.Stages {
		if p := b.pilots[stage]; p != nil && p.inflight > 0 {
			return true
		}
	}
	return false
}

// completionPriceLocked is the completion tokens one request of stage is
// priced at, and what from; known is false when nothing prices it. Call
// with mu held.
func (b *Batcher) completionPriceLocked(stage string) (tokens float64, from string, known bool) {
	e := b.meter.completionEstimate(stage)
	p := b.pilots[stage]
	pilotOver := p != nil && p.sent >= b.opt.PilotRequests && p.inflight == 0
	plan, planned := b.opt.PlanCompletion[stage]
	switch {
	case e.Answers >= ownAnswers:
		return e.Upper, fmt.Sprintf("the run's %d answers of the stage", e.Answers), true
	case planned && plan > 0:
		return plan, "plan.json (distill plan's pilot)", true
	case e.Answers > 0 && (e.Answers >= b.opt.PilotRequests || pilotOver):
		return e.Upper, fmt.Sprintf("an online pilot (%d answers)", e.Answers), true
	}
	return 0, "", false
}

// estimateLocked prices a file's rows at the batch rate (see above),
// each stage's completion tokens at most its rows' max_tokens. A state
// journaled before the rows' tokens were kept keeps its estimate. Call
// with mu held.
func (b *Batcher) estimateLocked(s *BatchState) float64 {
	if s.PromptTokens == nil {
		return s.EstCostUSD
	}
	var cost float64
	for _, stage := range sortedStages(s.Stages) {
		completion := float64(s.MaxCompletion[stage])
		per, from, known := b.completionPriceLocked(stage)
		if !known {
			from = "max_tokens (nothing else prices it)"
		} else {
			completion = min(completion, math.Ceil(per*float64(s.Stages[stage])))
		}
		if b.pricedFrom[stage] != from {
			b.pricedFrom[stage] = from
			b.log.Info("batch rows priced", "stage", stage, "completion_tokens_per_request", math.Round(completion/float64(max(1, s.Stages[stage]))), "from", from)
		}
		cost += b.meter.BatchCost(s.Model, s.PromptTokens[stage], int64(completion))
	}
	return cost
}
