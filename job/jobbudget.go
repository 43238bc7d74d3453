package job

import (
	"fmt"
)

// Budget scopes (budget.scope): whose spending a budget's limits cap.
const (
	// BudgetPerWorker: the limits are each run's own; K workers of a
	// partitioned job may spend K times them together. The default.
	BudgetPerWorker = "worker"
	// BudgetPerJob: the limits are the whole job's; worker I of K enforces
	// a Kth of them, so the workers together stay within them.
	BudgetPerJob = "job"
)

// BudgetShare is the budget a run enforces (report.json's budget), and
// the job's budget it is a share of.
type BudgetShare struct {
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	// Scope is budget.scope; Workers the K of a partitioned job (0 when
	// the run is not partitioned).
	Scope   string `json:"scope"`
	Workers int    `json:"workers,omitempty"`
	// JobMaxCostUSD and JobMaxTokens are what the workers together may
	// spend: the job's limits with scope job, K times the run's with
	// scope worker.
	JobMaxCostUSD float64 `json:"job_max_cost_usd,omitempty"`
	JobMaxTokens  int64   `json:"job_max_tokens,omitempty"`
}

// BudgetShare is the budget this run enforces: the job's, or with scope
// job and a partition I/K, a Kth of it. Every part of a run that checks
// or reports the budget reads it here.
func (j *Job) BudgetShare() BudgetShare {
	b := BudgetShare{MaxCostUSD: j.Budget.MaxCostUSD, MaxTokens: j.Budget.MaxTokens, Scope: j.Budget.Scope}
	if b.Scope == "" {
		b.Scope = BudgetPerWorker
	}
	b.JobMaxCostUSD, b.JobMaxTokens = b.MaxCostUSD, b.MaxTokens
	p, err := ParsePartition(j.Partition)
	if j.Partition == "" || err != nil {
		return b
	}
	b.Workers = p.Count
	k := float64(p.Count)
	if b.Scope == BudgetPerJob {
		b.MaxCostUSD, b.MaxTokens = b.MaxCostUSD/k, j.Budget.MaxTokens/int64(p.Count)
	} else {
		b.JobMaxCostUSD, b.JobMaxTokens = b.MaxCostUSD*k, b.MaxTokens*int64(p.Count)
	}
	return b
}

// Limited reports whether the share caps anything.
func (b BudgetShare) Limited() bool { return b.MaxCostUSD > 0 || b.MaxTokens > 0 }

// String says what the run enforces and what the workers may spend
// together, e.g. "max_cost_usd 2.5 of this worker (budget.scope job:
// max_cost_usd 10 over 4 workers)".
func (b BudgetShare) String() string {
	s := fmt.Sprintf("max_cost_usd %g, max_tokens %d", b.MaxCostUSD, b.MaxTokens)
	switch {
	case b.Workers == 0:
		return s
	case b.Scope == BudgetPerJob:
		return fmt.Sprintf("%s: this worker's 1/%d of the job's max_cost_usd %g, max_tokens %d (budget.scope job)",
			s, b.Workers, b.JobMaxCostUSD, b.JobMaxTokens)
	}
	return fmt.Sprintf("%s of this worker (budget.scope worker: the %d workers may spend up to max_cost_usd %g, max_tokens %d together)",
		s, b.Workers, b.JobMaxCostUSD, b.JobMaxTokens)
}

func (j *Job) validateBudget(v *validation) {
	if j.Budget.MaxCostUSD < 0 || j.Budget.MaxTokens < 0 {
		v.bad("budget", "limits must not be negative")
	}
	switch j.Budget.Scope {
	case "", BudgetPerWorker, BudgetPerJob:
	default:
		v.bad("budget.scope", "want worker (each partitioned worker's own) or job (split between the workers), not %q", j.Budget.Scope)
	}
}
