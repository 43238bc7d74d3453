package llm

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// BudgetGate holds the estimated cost and tokens of the calls in flight
// against a Meter's budget. The Meter alone can only refuse a call once
// the budget is spent, so calls sent at once could overshoot it by
// everything they spend together (512 calls in flight on a budget one of
// them fills); a call that reserves its estimate here first is refused
// before the budget is passed. Every Client reserves each live attempt
// with its Meter's gate (Meter.Gate). A second gate over the same Meter
// would not see the first one's reservations, so every caller reserves
// through Meter.Gate. It is safe for concurrent use.
type BudgetGate struct {
	meter      *Meter
	mu         sync.Mutex
	reserved   Estimate      // estimates of the calls in flight
	committed  float64       // USD the run's open batches are expected to cost (Batcher)
	inflight   int           // calls holding a reservation
	changed    chan struct{} // closed and replaced when a reservation ends
	costLimit  float64       // 0: none
	tokenLimit float64       // 0: none
	unbounded  bool          // neither limit is set: Reserve never waits
}

// Estimate is what one call is expected to spend at most: its cost in USD
// and its prompt plus completion tokens. +Inf means not known yet.
type Estimate struct {
	CostUSD float64
	Tokens  float64
}

// newBudgetGate returns a gate over m's budget (cost and tokens); a Meter makes its own (Meter.Gate).
func newBudgetGate(m *Meter) *BudgetGate {
	return &BudgetGate{
		meter: m, changed: make(chan struct{}),
		costLimit: m.budget.MaxCostUSD, tokenLimit: float64(m.budget.MaxTokens),
		unbounded: m.budget.MaxCostUSD <= 0 && m.budget.MaxTokens <= 0,
	}
}

// Reserve holds the estimated cost (USD) of one call against the cost
// budget until release is called; see ReserveEstimate.
func (g *BudgetGate) Reserve(ctx context.Context, estimate func() float64) (release func(), err error) {
	return g.ReserveEstimate(ctx, func() Estimate { return Estimate{CostUSD: estimate()} })
}

// ReserveEstimate holds the estimate of one call until release is called,
// once the call is done and what it really spent is in the Meter. estimate
// is asked again each time the gate looks, so it can use what the calls
// before taught the caller. It waits while the estimate does not fit
// beside the calls in flight under either budget; when it does not fit
// even with none in flight, it returns an error wrapping
// ErrBudgetExhausted, and when ctx ends first, the context's cause. An
// estimate of +Inf (not known yet) waits until no other call is in flight.
// Without a budget it never waits.
func (g *BudgetGate) ReserveEstimate(ctx context.Context, estimate func() Estimate) (release func(), err error) {
	if g.unbounded {
		return func() {}, nil
	}
	for {
		g.mu.Lock()
		cost, tokens := g.spent()
		cost += g.committed
		est := estimate()
		costFits := fits(g.costLimit, cost, g.reserved.CostUSD, est.CostUSD, g.inflight)
		tokensFit := fits(g.tokenLimit, tokens, g.reserved.Tokens, est.Tokens, g.inflight)
		if costFits && tokensFit {
			held := Estimate{CostUSD: finite(est.CostUSD, g.costLimit), Tokens: finite(est.Tokens, g.tokenLimit)}
			g.reserved.CostUSD += held.CostUSD
			g.reserved.Tokens += held.Tokens
			g.inflight++
			g.mu.Unlock()
			return g.releaser(held), nil
		}
		if g.inflight == 0 {
			g.mu.Unlock()
			return nil, g.refusal(cost, tokens, est, costFits)
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

// fits reports whether a call estimated at est fits under limit (0: none)
// beside what is spent and reserved; an unknown (+Inf) estimate fits only
// alone and while something is left.
func fits(limit, spent, reserved, est float64, inflight int) bool {
	if limit <= 0 {
		return true
	}
	if math.IsInf(est, 1) {
		return inflight == 0 && spent < limit
	}
	return spent+reserved+est <= limit
}

// refusal says which budget the next call would pass.
func (g *BudgetGate) refusal(cost, tokens float64, est Estimate, costFits bool) error {
	if !costFits {
		committed := ""
		if g.committed > 0 {
			committed = fmt.Sprintf(" (with $%.4f the open batches are expected to cost)", g.committed)
		}
		return fmt.Errorf("$%.4f spent%s of the $%g budget; the next call, estimated at up to $%.4f, would pass it: %w",
			cost, committed, g.costLimit, est.CostUSD, ErrBudgetExhausted)
	}
	return fmt.Errorf("%.0f tokens used of the %.0f-token budget; the next call, estimated at up to %.0f tokens, would pass it: %w",
		tokens, g.tokenLimit, est.Tokens, ErrBudgetExhausted)
}

// commit sets what the run's open batches are expected to cost: the calls
// the gate admits leave room for it, as the batches leave room for the
// calls in flight (reservedCost). Calls waiting look again.
func (g *BudgetGate) commit(usd float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if usd == g.committed {
		return
	}
	g.committed = usd
	close(g.changed)
	g.changed = make(chan struct{})
}

// reservedCost is the estimated cost of the calls in flight.
func (g *BudgetGate) reservedCost() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reserved.CostUSD
}

// spent is what the Meter has counted: cost and tokens; g.mu is held.
func (g *BudgetGate) spent() (cost, tokens float64) {
	g.meter.mu.Lock()
	defer g.meter.mu.Unlock()
	return g.meter.total.CostUSD, float64(g.meter.total.PromptTokens + g.meter.total.CompletionTokens)
}

func (g *BudgetGate) releaser(held Estimate) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.reserved.CostUSD -= held.CostUSD
			g.reserved.Tokens -= held.Tokens
			g.inflight--
			close(g.changed)
			g.changed = make(chan struct{})
			g.mu.Unlock()
		})
	}
}

// finite is what an estimate holds of a budget: an unknown one, all of it.
func finite(est, limit float64) float64 {
	if math.IsInf(est, 1) {
		return limit
	}
	return est
}
