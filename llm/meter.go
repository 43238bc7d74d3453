package llm

import (
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	PromptPerMTok float64 `json:"prompt_per_mtok"`
	// CachedPromptPerMTok prices the prompt tokens a server's prefix cache
	// reused (usage.prompt_tokens_details.cached_tokens): the hosted APIs
	// charge a fraction of the prompt price for them. 0 prices them as
	// other prompt tokens.
	CachedPromptPerMTok float64 `json:"cached_prompt_per_mtok,omitempty"`
	CompletionPerMTok   float64 `json:"completion_per_mtok"`
	// BatchRate is the share of the online price a request answered
	// through the provider's batch API costs; 0 means DefaultBatchRate.
	BatchRate float64 `json:"batch_rate,omitempty"`
}

// DefaultBatchRate is the share of the online price a batch request costs
// when a price does not say: OpenAI's, and most hosted providers', half.
const DefaultBatchRate = 0.5

// batchRate is p's batch share of the online price.
func (p Price) batchRate() float64 {
	if p.BatchRate > 0 {
		return p.BatchRate
	}
	return DefaultBatchRate
}

// Budget caps a run's spending. Zero fields mean no limit. Tokens count
// prompt plus completion tokens.
type Budget struct {
	MaxCostUSD float64 `json:"max_cost_usd"`
	MaxTokens  int64   `json:"max_tokens"`
}

// StageStats are the counters of one stage (or of the whole run).
//
// Requests counts logical live requests, each of which may take several
// attempts: a request is one sent to the endpoint. This is the one
// definition of a request count (records' usage, report.json, distill
// status and validate follow it); an answer read from the response cache
// is never a request. On resume it is recounted as the answers the run's
// cache paid for plus the requests that failed (Meter.RestoreSpent), since
// a report.json a kill left lags the cache; Retries counts the extra attempts; CacheHits counts calls
// answered from the cache (they add no tokens and no cost); Failures
// counts live requests that ended in an error other than cancellation;
// Repairs counts replies that did not parse and were shown back to the model
// (see ChatParsed). BatchAnswers counts the Requests answered through a
// provider's batch API (priced at the batch rate).
// ErrorsByReason counts failed attempts by reason ("429", "500",
// "timeout", "reset", "refused", "truncated", "malformed",
// "choice_count", ...); "budget" counts calls refused by the budget.
// FinishReasons counts the choices of live responses by finish_reason.
// Models counts live requests by model. LargestCompletion is the most
// completion tokens one live answer had, over every session: what the
// budget reserves for the stage's next request (see BudgetGate).
type StageStats struct {
	Requests     int64 `json:"requests"`
	CacheHits    int64 `json:"cache_hits"`
	Retries      int64 `json:"retries"`
	Failures     int64 `json:"failures"`
	Repairs      int64 `json:"repairs"`
	BatchAnswers int64 `json:"batch_answers,omitempty"`
	PromptTokens int64 `json:"prompt_tokens"`
	// CachedPromptTokens are the PromptTokens the servers' prefix caches
	// reused (usage.prompt_tokens_details.cached_tokens), priced at
	// Price.CachedPromptPerMTok; absent when none was reported.
	CachedPromptTokens int64            `json:"cached_prompt_tokens,omitempty"`
	CompletionTokens   int64            `json:"completion_tokens"`
	CostUSD            float64          `json:"cost_usd"`
	Models             map[string]int64 `json:"models,omitempty"`
	ErrorsByReason     map[string]int64 `json:"errors_by_reason,omitempty"`
	FinishReasons      map[string]int64 `json:"finish_reasons,omitempty"`
	// LargestCompletion: see above; absent in reports of earlier versions.
	LargestCompletion int64 `json:"largest_completion,omitempty"`
	// LostReplies counts attempts whose reply was lost after the provider
	// may have generated it (see lost.go); LostTokens and LostCostUSD are
	// what they may have cost, estimated, and LostCostUSD is in CostUSD.
	LostReplies int64   `json:"lost_replies,omitempty"`
	LostTokens  int64   `json:"lost_tokens,omitempty"`
	LostCostUSD float64 `json:"lost_cost_usd,omitempty"`
}

func (s StageStats) clone() StageStats {
	s.Models = maps.Clone(s.Models)
	s.ErrorsByReason = maps.Clone(s.ErrorsByReason)
	s.FinishReasons = maps.Clone(s.FinishReasons)
	return s
}

// Snapshot is a copy of a Meter's counters, by stage and in total.
type Snapshot struct {
	Stages map[string]StageStats `json:"stages"`
	Total  StageStats            `json:"total"`
}

// Meter counts requests, tokens and cost for a run and enforces its
// Budget. One Meter is shared by every Client of a run; it is safe for
// concurrent use.
//
// Each live attempt reserves its estimated cost and tokens with the
// Meter's BudgetGate (Gate) before it is sent, so requests in flight
// together do not pass the budget (see Client's Accounting).
type Meter struct {
	prices map[string]Price
	budget Budget
	gate   *BudgetGate

	mu     sync.Mutex
	stages map[string]*StageStats
	total  StageStats
	// answers are the completion tokens of each stage's answered
	// requests, for pricing requests not yet answered (Estimate).
	answers map[string]*moments
}

// moments sum the completion tokens of a stage's answered requests; the
// squares only of those answered in this session (sqN of them).
type moments struct {
	n, sum   float64
	sqN, sq1 float64 // this session's count and sum
	sq       float64 // this session's sum of squares
}

// NewMeter returns a Meter that prices responses by model (unknown models
// cost 0, but their tokens are counted) and stops live requests once
// budget is spent.
func NewMeter(prices map[string]Price, budget Budget) *Meter {
	m := &Meter{
		prices:  maps.Clone(prices),
		budget:  budget,
		stages:  make(map[string]*StageStats),
		answers: make(map[string]*moments),
	}
	m.gate = newBudgetGate(m)
	return m
}

// Gate is the BudgetGate every Client of the Meter reserves its live
// attempts with.
func (m *Meter) Gate() *BudgetGate { return m.gate }

// Restore replaces the counters with s, typically the totals saved by
// earlier sessions of a resumed run, so the budget covers them too. Call
// it before the Meter is used.
func (m *Meter) Restore(s Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stages = make(map[string]*StageStats, len(s.Stages))
	for name, st := range s.Stages {
		c := st.clone()
		m.stages[name] = &c
	}
	m.total = s.Total.clone()
}

// RestoreSpent sets the tokens and cost of every stage, and of the total,
// to what spent says the run paid for, priced with the Meter's prices:
// Cache.Spent, the usage of every response the run's cache holds as paid,
// which survives a kill that report.json does not. Requests and
// BatchAnswers are recounted from it the same way (see StageStats);
// hits, retries and failures are kept from Restore. Call it after
// Restore and before the Meter is used.
func (m *Meter) RestoreSpent(spent []cache.Spend) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range append(slices.Collect(maps.Values(m.stages)), &m.total) {
		t.PromptTokens, t.CachedPromptTokens, t.CompletionTokens, t.CostUSD = 0, 0, 0, t.LostCostUSD // lost replies are not in the cache
		t.Requests, t.BatchAnswers = t.Failures, 0
	}
	for _, s := range spent {
		st := m.stages[s.Stage]
		if st == nil {
			st = &StageStats{}
			m.stages[s.Stage] = st
		}
		cost := m.cost(s.Model, tokens{s.PromptTokens, s.CachedPromptTokens, s.CompletionTokens}, s.Batch)
		for _, t := range []*StageStats{st, &m.total} {
			t.PromptTokens += s.PromptTokens
			t.CachedPromptTokens += s.CachedPromptTokens
			t.CompletionTokens += s.CompletionTokens
			t.CostUSD += cost
			t.Requests += s.Responses
			if s.Batch {
				t.BatchAnswers += s.Responses
			}
		}
		a := m.answersOf(s.Stage)
		a.n += float64(s.Responses)
		a.sum += float64(s.CompletionTokens)
	}
}

// answersOf is a stage's answer moments; m.mu is held.
func (m *Meter) answersOf(stage string) *moments {
	a := m.answers[stage]
	if a == nil {
		a = &moments{}
		m.answers[stage] = a
	}
	return a
}

// Snapshot returns a deep copy of the counters.
func (m *Meter) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Snapshot{Stages: make(map[string]StageStats, len(m.stages)), Total: m.total.clone()}
	for name, st := range m.stages {
		s.Stages[name] = st.clone()
	}
	return s
}

// Exhausted reports whether the budget is spent.
func (m *Meter) Exhausted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b := m.budget.MaxCostUSD; b > 0 && m.total.CostUSD >= b {
		return true
	}
	if b := m.budget.MaxTokens; b > 0 && m.total.PromptTokens+m.total.CompletionTokens+m.total.LostTokens >= b {
		return true
	}
	return false
}

// Cost prices a response of model (none of its prompt tokens cached).
func (m *Meter) Cost(model string, promptTokens, completionTokens int64) float64 {
	return m.cost(model, tokens{prompt: promptTokens, completion: completionTokens}, false)
}

// BatchCost prices a response of model answered through a batch.
func (m *Meter) BatchCost(model string, promptTokens, completionTokens int64) float64 {
	return m.cost(model, tokens{prompt: promptTokens, completion: completionTokens}, true)
}

// tokens are a response's token counts: its prompt tokens, those of them
// a prefix cache reused, its completion tokens.
type tokens struct{ prompt, cached, completion int64 }

// cost prices t at model's price: the cached prompt tokens at the cached
// rate (the prompt rate when the price has none), the rest at the prompt
// rate.
func (m *Meter) cost(model string, t tokens, batch bool) float64 {
	p := m.prices[model]
	cachedRate := p.CachedPromptPerMTok
	if cachedRate == 0 {
		cachedRate = p.PromptPerMTok
	}
	cached := min(max(t.cached, 0), t.prompt)
	c := (float64(t.prompt-cached)*p.PromptPerMTok + float64(cached)*cachedRate + float64(t.completion)*p.CompletionPerMTok) / 1e6
	if batch {
		c *= p.batchRate()
	}
	return c
}

// Spent is the cost counted so far, over every session.
func (m *Meter) Spent() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total.CostUSD
}

// update applies f to the stage's counters and to the total.
func (m *Meter) update(stage string, f func(*StageStats)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stages[stage]
	if st == nil {
		st = &StageStats{}
		m.stages[stage] = st
	}
	f(st)
	f(&m.total)
}

func (m *Meter) hit(stage string) {
	m.update(stage, func(s *StageStats) { s.CacheHits++ })
}

func (m *Meter) request(stage, model string) {
	m.update(stage, func(s *StageStats) {
		s.Requests++
		bump(&s.Models, model)
	})
}

func (m *Meter) retry(stage string) {
	m.update(stage, func(s *StageStats) { s.Retries++ })
}

func (m *Meter) attemptError(stage, reason string) {
	m.update(stage, func(s *StageStats) { bump(&s.ErrorsByReason, reason) })
}

func (m *Meter) failure(stage string) {
	m.update(stage, func(s *StageStats) { s.Failures++ })
}

// success records a live response and returns its cost.
func (m *Meter) success(stage, model string, prompt, completion int64, finish []string) float64 {
	return m.successTokens(stage, model, tokens{prompt: prompt, completion: completion}, finish)
}

// successTokens records a live response of t tokens (some of its prompt
// tokens maybe cached) and returns its cost.
func (m *Meter) successTokens(stage, model string, t tokens, finish []string) float64 {
	return m.charge(stage, model, t, finish, false)
}

// batchAnswer records a request answered by a batch, counted as sent when
// its answer came, and returns its cost at the batch rate.
func (m *Meter) batchAnswer(stage, model string, prompt, completion int64, finish []string) float64 {
	m.request(stage, model)
	m.update(stage, func(s *StageStats) { s.BatchAnswers++ })
	return m.charge(stage, model, tokens{prompt: prompt, completion: completion}, finish, true)
}

func (m *Meter) charge(stage, model string, t tokens, finish []string, batch bool) float64 {
	prompt, completion := t.prompt, t.completion
	cost := m.cost(model, t, batch)
	m.mu.Lock()
	a, c := m.answersOf(stage), float64(completion)
	a.n, a.sum, a.sqN, a.sq1, a.sq = a.n+1, a.sum+c, a.sqN+1, a.sq1+c, a.sq+c*c
	m.mu.Unlock()
	m.update(stage, func(s *StageStats) {
		s.PromptTokens += prompt
		s.CachedPromptTokens += t.cached
		s.CompletionTokens += completion
		s.CostUSD += cost
		s.LargestCompletion = max(s.LargestCompletion, completion)
		for _, f := range finish {
			if f == "" {
				f = "none"
			}
			bump(&s.FinishReasons, f)
		}
	})
	return cost
}

func bump(m *map[string]int64, k string) {
	if *m == nil {
		*m = make(map[string]int64)
	}
	(*m)[k]++
}

// AnswerEstimate is what a stage's answered requests say of the
// completion tokens of one not yet answered (its choices together).
type AnswerEstimate struct {
	// Answers is how many answered requests it stands on.
	Answers int
	// Mean is their mean completion tokens; Upper adds twice the standard
	// error of that mean (from this session's answers; without two of
	// them, Upper is Mean): a price for the rows of a batch that the
	// batch's real cost passes only by chance.
	Mean, Upper float64
	// Most is the largest completion of the stage's answers over every
	// session whose report.json says it (StageStats.LargestCompletion).
	Most float64
}

// largestCompletion is the largest completion of any stage's answers (0
// before the first).
func (m *Meter) largestCompletion() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return float64(m.total.LargestCompletion)
}

// completionEstimate is what the stage's answered requests, over every
// session, say of the next one's completion tokens.
func (m *Meter) completionEstimate(stage string) AnswerEstimate {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.answers[stage]
	if a == nil || a.n == 0 {
		return AnswerEstimate{}
	}
	e := AnswerEstimate{Answers: int(a.n), Mean: a.sum / a.n}
	e.Upper = e.Mean
	if st := m.stages[stage]; st != nil {
		e.Most = float64(st.LargestCompletion)
	}
	if a.sqN >= 2 {
		mean := a.sq1 / a.sqN
		variance := max(0, (a.sq-a.sqN*mean*mean)/(a.sqN-1))
		e.Upper += 2 * math.Sqrt(variance/a.n)
	}
	return e
}
