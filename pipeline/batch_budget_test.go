package pipeline

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/internal/runtest"
)

// TestBatchBudgetFromAFreshDirectory: a budget in batch mode prices the
// rows of a batch from what their answers are expected to cost, not from
// their max_tokens: from a fresh directory, with no plan, a budget above
// the job's real cost lets the run finish; one below stops it within the
// budget, after it sent the batches that fit.
func TestBatchBudgetFromAFreshDirectory(t *testing.T) {
	stages := []string{job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical}
	srv, job, rows := runtest.BatchSetup(t, 60, llmtest.Config{}, stages...)
	job.Batch.MaxRequests = 16 // a stage's requests in several batches, so that some fit a budget
	free := job
	free.Out = job.Out + "-no-budget"
	real := runJob(t, free, Options{}).LLM.Total.CostUSD
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
			rep := runJob(t, j, Options{})
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

// TestBatchBudgetPricesFromThePlan: after distill plan in the run
// directory, a run in batch mode with a budget prices its batch rows from
// the plan's pilot (said in the log) and sends no online pilot of its own.
func TestBatchBudgetPricesFromThePlan(t *testing.T) {
	stages := []string{job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical}
	srv, job, _ := runtest.BatchSetup(t, 60, llmtest.Config{KeepLog: true}, stages...)
	if _, err := Plan(context.Background(), job, Options{}, PlanOptions{Sample: 15}); err != nil {
		t.Fatal(err)
	}
	online := len(srv.Log())
	job.Budget.MaxCostUSD = 10
	var log bytes.Buffer
	rep := runJob(t, job, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if rep.Status != StatusFinished {
		t.Fatalf("%s: %s", rep.Status, rep.StopReason)
	}
	if n := len(srv.Log()) - online; n != 0 {
		t.Errorf("%d requests sent online after the plan: a pilot the plan made unneeded", n)
	}
	if !strings.Contains(log.String(), `from="plan.json`) {
		t.Errorf("the log does not say the rows are priced from plan.json:\n%s", log.String())
	}
}
