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
