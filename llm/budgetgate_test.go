package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBudgetGateHoldsAtConcurrency: 16 callers each spend $1 against a $5
// budget; with each call reserved first, at most five calls are paid, and
// the rest are refused with ErrBudgetExhausted once nothing fits.
func TestBudgetGateHoldsAtConcurrency(t *testing.T) {
	m := NewMeter(map[string]Price{"m": {PromptPerMTok: 1e6}}, Budget{MaxCostUSD: 5})
	g := newBudgetGate(m)
	var paid, refused atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			release, err := g.Reserve(context.Background(), usd(1))
			if errors.Is(err, ErrBudgetExhausted) {
				refused.Add(1)
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
			m.success("s", "m", 1, 0, nil) // $1
			paid.Add(1)
			release()
		})
	}
	wg.Wait()
	if s := m.Snapshot().Total.CostUSD; s > 5 || paid.Load() != 5 || refused.Load() != 11 {
		t.Errorf("spent $%g on %d calls, %d refused; want $5 on 5, 11 refused", s, paid.Load(), refused.Load())
	}
}

// TestBudgetGateUnknownCost: a call of unknown cost goes alone; one that
// costs less than reserved lets the next in.
func TestBudgetGateUnknownCost(t *testing.T) {
	m := NewMeter(map[string]Price{"m": {PromptPerMTok: 1e6}}, Budget{MaxCostUSD: 3})
	g := newBudgetGate(m)
	release, err := g.Reserve(context.Background(), usd(math.Inf(1)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Reserve(ctx, usd(1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second call went out beside one of unknown cost: %v", err)
	}
	m.success("s", "m", 1, 0, nil)
	release()
	r2, err := g.Reserve(context.Background(), usd(2))
	if err != nil {
		t.Fatalf("$2 after $1 of a $3 budget: %v", err)
	}
	r2()
	if _, err := g.Reserve(context.Background(), usd(2.5)); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("$2.50 after $1 of a $3 budget: %v; want ErrBudgetExhausted", err)
	}
	if r, err := newBudgetGate(NewMeter(nil, Budget{})).Reserve(context.Background(), usd(1e9)); err != nil {
		t.Errorf("without a budget: %v", err)
	} else {
		r()
	}
}

// usd is a fixed estimate.
func usd(x float64) func() float64 { return func() float64 { return x } }

// TestBudgetGateEstimateLearns: a call waiting with an unknown cost is
// looked at again with what the caller learned meanwhile: once the first
// call showed what calls cost, the second is refused instead of going out
// alone past the budget.
func TestBudgetGateEstimateLearns(t *testing.T) {
	m := NewMeter(map[string]Price{"m": {PromptPerMTok: 1e6}}, Budget{MaxCostUSD: 3})
	g := newBudgetGate(m)
	var known atomic.Bool
	estimate := func() float64 {
		if known.Load() {
			return 2
		}
		return math.Inf(1)
	}
	first, err := g.Reserve(context.Background(), estimate)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	asked := make(chan struct{}) // closed once the second's cost was estimated, still unknown
	var once sync.Once
	go func() {
		release, err := g.Reserve(context.Background(), func() float64 {
			est := estimate()
			once.Do(func() { close(asked) })
			return est
		})
		if err == nil {
			release()
		}
		second <- err
	}()
	<-asked                        // the second waits beside the first (the gate's lock is held until it does)
	m.success("s", "m", 2, 0, nil) // the first cost $2
	known.Store(true)
	first()
	if err := <-second; !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("a $2 call after $2 of a $3 budget: %v; want ErrBudgetExhausted", err)
	}
}

// TestStreak: three calls in a row that could not connect stop a caller;
// an answer in between starts the count again; fifty transient failures
// of any kind stop it too.
func TestStreak(t *testing.T) {
	refused := &Error{Class: ClassRetryable, Reason: "refused"}
	var s Streak
	for i := range 2 {
		if v := s.Observe(refused); v != StreakGoOn {
			t.Fatalf("verdict %v after refusal %d", v, i+1)
		}
	}
	s.Observe(nil)
	s.Observe(refused)
	s.Observe(&Error{Class: ClassPermanent, Reason: "400"}) // the endpoint answered
	s.Observe(refused)
	if v := s.Observe(refused); v != StreakGoOn {
		t.Fatalf("verdict %v after two refusals in a row", v)
	}
	if v := s.Observe(refused); v != StreakUnreachable {
		t.Errorf("verdict %v after three refusals in a row; want StreakUnreachable", v)
	}
	s.Reset()
	var v StreakVerdict
	for i := range FailingStreakLimit {
		reason := "500"
		if i%2 == 0 {
			reason = "refused"
		}
		v = s.Observe(&Error{Class: ClassRetryable, Reason: reason})
	}
	if v != StreakFailing || s.Len() != FailingStreakLimit {
		t.Errorf("verdict %v after %d transient failures; want StreakFailing", v, s.Len())
	}
}

// TestClientBudgetHoldsWithRequestsInFlight: 64 callers at 32 requests in
// flight against a budget a handful of answers fill. Each live attempt
// reserves its estimate first, so neither the token nor the cost budget is
// passed (without the gate every request in flight would be paid: about
// 32 answers of 15 tokens), and the requests refused say why.
func TestClientBudgetHoldsWithRequestsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget Budget
		within func(StageStats) bool
	}{
		{"tokens", Budget{MaxTokens: 200}, func(s StageStats) bool { return s.PromptTokens+s.CompletionTokens <= 200 }},
		{"cost", Budget{MaxCostUSD: 200}, func(s StageStats) bool { return s.CostUSD <= 200 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				time.Sleep(20 * time.Millisecond)
				writeJSON(w, 200, okBody(1)) // 10 prompt and 5 completion tokens
			})
			meter := NewMeter(map[string]Price{"m": {PromptPerMTok: 1e6, CompletionPerMTok: 1e6}}, tc.budget) // $1 a token
			opt := fastOptions()
			opt.MaxInFlight = 32
			c := newTestClient(t, srv.endpoint(), opt, nil, meter)
			var wg sync.WaitGroup
			var answered, refused atomic.Int64
			for i := range 64 {
				wg.Go(func() {
					req := simpleRequest(fmt.Sprintf("question %d", i))
					req.MaxTokens = 5
					_, err := c.Chat(t.Context(), req)
					switch {
					case err == nil:
						answered.Add(1)
					case errors.Is(err, ErrBudgetExhausted):
						refused.Add(1)
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			total := meter.Snapshot().Total
			if !tc.within(total) {
				t.Errorf("spent %d tokens, $%g on %d answers; the budget is %+v", total.PromptTokens+total.CompletionTokens, total.CostUSD, answered.Load(), tc.budget)
			}
			if answered.Load() < 3 || answered.Load()+refused.Load() != 64 || srv.hits.Load() != answered.Load() {
				t.Errorf("%d answered, %d refused, %d reached the server", answered.Load(), refused.Load(), srv.hits.Load())
			}
		})
	}
}

// TestBudgetGateLeavesRoomForOpenBatches: an online call is refused when
// it would pass the budget beside what the run's open batches are
// expected to cost (a wave cut to the budget's edge), and fits again once
// they cost less than expected.
func TestBudgetGateLeavesRoomForOpenBatches(t *testing.T) {
	t.Parallel()
	m := NewMeter(map[string]Price{"m": {PromptPerMTok: 1e6}}, Budget{MaxCostUSD: 3})
	g := newBudgetGate(m)
	g.commit(2.5)
	_, err := g.Reserve(context.Background(), usd(1))
	if !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "open batches") {
		t.Errorf("$1 beside $2.50 of open batches on a $3 budget: %v; want ErrBudgetExhausted naming the batches", err)
	}
	g.commit(1.5)
	if r, err := g.Reserve(context.Background(), usd(1)); err != nil {
		t.Errorf("$1 beside $1.50 of open batches on a $3 budget: %v", err)
	} else {
		r()
	}
}
