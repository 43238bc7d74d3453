package pipeline

import (
	"log/slog"

	"github.com/rubricforge/rubricforge/job"
)

// warnBudgetPerWorker says, at the start of a partitioned worker whose
// budget caps only itself, that the workers together may spend K times it.
func warnBudgetPerWorker(j *job.Job, log *slog.Logger) {
	b := j.BudgetShare()
	if b.Workers > 1 && b.Limited() && j.Budget.Scope == "" {
		log.Warn("the budget is this worker's own: the workers together may spend K times it; set budget.scope: job (--budget-scope job) to split one budget between them",
			"workers", b.Workers, "max_cost_usd", b.MaxCostUSD, "together_up_to", b.JobMaxCostUSD)
	}
}

// stoppedAtBudget reports whether the session before stopped at its
// budget and b, this session's, is not raised: a run stopped by its budget
// stops again at once, sending nothing, until the budget is raised
// (docs/budgets.md). The meter alone does not say so: a session stops when
// the next request would pass the budget, so what is left may still pay
// for the first requests of problems it never started, though not for
// finishing them.
func stoppedAtBudget(prev *Report, b job.BudgetShare) bool {
	if prev.StoppedBy != StopBudget || prev.Budget == nil {
		return false
	}
	raised := func(now, was float64) bool { return was > 0 && (now <= 0 || now > was) }
	return !raised(b.MaxCostUSD, prev.Budget.MaxCostUSD) && !raised(float64(b.MaxTokens), float64(prev.Budget.MaxTokens))
}
