package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestBatchBudgetFromAFreshDirectory: a budget in batch mode prices the
// rows of a batch from what their answers are expected to cost, not from
// their max_tokens: from a fresh directory, with no plan, a budget above
// the job's real cost lets the run finish; one below stops it within the
// budget, after it sent the batches that fit.
func TestBatchBudgetFromAFreshDirectory(t *testing.T) {
	t.Parallel()
	stages := []string{job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical}
	srv, job, rows := runtest.BatchSetup(t, 24, sim.Config{}, stages...)
	job.Batch.MaxRequests = 8 // a stage's requests in several batches, so that some fit a budget
	free := job
	free.Out = job.Out + "-no-budget"
	real := runJob(t, free, Options{HTTPClient: runtest.InProcess}).LLM.Total.CostUSD
	if real <= 0 {
		t.Fatal("the job cost nothing: it needs a price")
	}
	cases := []struct {
		name   string
		budget float64
		finish bool
	}{
		{"above the real cost", 1.5 * real, true},
		{"below the real cost", 0.5 * real, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job
			j.Out = filepath.Join(t.TempDir(), "run")
			j.Budget.MaxCostUSD = tc.budget
			created := srv.BatchStats().BatchesCreated
			rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
			spent, sent := rep.LLM.Total.CostUSD, srv.BatchStats().BatchesCreated-created
			t.Logf("budget $%.4f (job $%.4f): %s %s, spent $%.4f, %d batches", tc.budget, real, rep.Status, rep.StoppedBy, spent, sent)
			if tc.finish {
				if rep.Status != StatusFinished {
					t.Fatalf("stopped (%s) with a budget of $%.4f for a job of $%.4f: %s", rep.StoppedBy, tc.budget, real, rep.StopReason)
				}
				checkAccounted(t, j.Out, rows, rep)
				return
			}
			if rep.StoppedBy != StopBudget {
				t.Fatalf("%s (%s), want a budget stop", rep.Status, rep.StoppedBy)
			}
			if spent > tc.budget {
				t.Errorf("spent $%.4f of a $%.4f budget", spent, tc.budget)
			}
			if sent == 0 || spent < tc.budget/4 {
				t.Errorf("%d batches sent, $%.4f spent of $%.4f: the batches that fit were not sent", sent, spent, tc.budget)
			}
		})
	}
}
