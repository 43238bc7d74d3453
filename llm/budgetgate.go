package llm

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// BudgetGate holds the estimated cost of the calls in flight against a
// Meter's cost budget. The Meter checks the budget before each attempt, so
// calls sent at once can overshoot it by everything they spend together (16
// calls in flight on a budget one of them fills); a caller that reserves
// each call's estimate here first stops before the budget is passed. It is
// safe for concurrent use.
type BudgetGate struct {
	meter    *Meter
	mu       sync.Mutex
	reserved float64       // estimated cost of the calls in flight
	inflight int           // calls holding a reservation
	changed  chan struct{} // closed and replaced when a reservation ends
}

// NewBudgetGate returns a gate over m's cost budget.
func NewBudgetGate(m *Meter) *BudgetGate {
	return &BudgetGate{meter: m, changed: make(chan struct{})}
}

// Reserve holds the estimated cost (USD) of one call until release is
// called, once the call is done and its real cost is in the Meter. estimate
// is asked again each time the gate looks, so it can use what the calls
// before taught the caller. Reserve waits while the estimate does not fit
// beside the calls in flight; when it does not fit even with none in
// flight, it returns an error wrapping ErrBudgetExhausted, and when ctx
// ends first, the context's cause. An estimate of +Inf (not known yet)
// waits until no other call is in flight. Without a cost budget it never
// waits.
func (g *BudgetGate) Reserve(ctx context.Context, estimate func() float64) (release func(), err error) {
	limit := g.meter.budget.MaxCostUSD
	if limit <= 0 {
		return func() {}, nil
	}
	for {
		g.mu.Lock()
		spent, cost := g.spent(), estimate()
		fits := spent+g.reserved+cost <= limit || math.IsInf(cost, 1) && g.inflight == 0 && spent < limit
		if fits {
			g.reserved += finite(cost, limit)
			g.inflight++
			g.mu.Unlock()
			return g.releaser(finite(cost, limit)), nil
		}
		if g.inflight == 0 {
			g.mu.Unlock()
			return nil, fmt.Errorf("$%.4f spent of the $%g budget; the next call, estimated at up to $%.4f, would pass it: %w",
				spent, limit, cost, ErrBudgetExhausted)
		}
		wait := g.changed
		g.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// spent is what the Meter has counted; g.mu is held.
func (g *BudgetGate) spent() float64 {
	g.meter.mu.Lock()
	defer g.meter.mu.Unlock()
	return g.meter.total.CostUSD
}

func (g *BudgetGate) releaser(cost float64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.reserved -= cost
			g.inflight--
			close(g.changed)
			g.changed = make(chan struct{})
			g.mu.Unlock()
		})
	}
}

// finite is what an estimate holds of the budget: an unknown one, all of it.
func finite(cost, limit float64) float64 {
	if math.IsInf(cost, 1) {
		return limit
	}
	return cost
}
