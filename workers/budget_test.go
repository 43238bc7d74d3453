package workers

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestBudgetScopeJobSplitsItBetweenWorkers: K workers sharing one job file
// with budget.scope job spend no more than the job's budget together (each
// enforces a Kth of it), while with the default scope each worker's budget
// is its own; distill status over the workers says which.
func TestBudgetScopeJobSplitsItBetweenWorkers(t *testing.T) {
	t.Parallel()
	// In batch mode, where a budget holds back the batches that do not
	// fit it (online, each worker may pass its budget by what its
	// requests in flight spend).
	_, whole, _ := runtest.BatchSetup(t, 12, sim.Config{}, job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical)
	whole.Batch.MaxRequests = 8
	cost := runJob(t, whole, pipeline.Options{}).LLM.Total.CostUSD
	const k = 4
	cases := []struct {
		scope      string
		wantStatus string
		overBudget bool // the workers together may pass the job's budget
	}{
		{job.BudgetPerJob, "for each of 4 workers", false},
		{"", "the 4 workers may spend up to", true},
	}
	for _, tc := range cases {
		t.Run("scope "+tc.scope, func(t *testing.T) {
			t.Parallel()
			budget := cost / 2
			var spent float64
			var dirs []string
			for i := range k {
				jb := whole
				jb.Out = filepath.Join(t.TempDir(), fmt.Sprintf("part-%d", i))
				jb.Partition = fmt.Sprintf("%d/%d", i, k)
				jb.Budget.MaxCostUSD, jb.Budget.Scope = budget, tc.scope
				rep := runJob(t, jb, pipeline.Options{})
				spent += rep.LLM.Total.CostUSD
				dirs = append(dirs, jb.Out)
				if rep.Budget == nil || (tc.scope == job.BudgetPerJob) != (rep.Budget.MaxCostUSD < budget) {
					t.Errorf("worker %d enforces %+v of a $%.4f budget with scope %q", i, rep.Budget, budget, tc.scope)
				}
			}
			if !tc.overBudget && spent > budget {
				t.Errorf("%d workers spent $%.4f together of a job budget of $%.4f (the job costs $%.4f)", k, spent, budget, cost)
			}
			if tc.overBudget && spent <= budget {
				t.Errorf("with budgets per worker the workers spent $%.4f of $%.4f: the test does not show the difference", spent, budget)
			}
			ws, err := ReadWorkers(dirs)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			ws.WriteText(&out)
			if !strings.Contains(out.String(), "budget: ") || !strings.Contains(out.String(), tc.wantStatus) {
				t.Errorf("status over the workers does not say how the budget is split:\n%s", out.String())
			}
		})
	}
}
