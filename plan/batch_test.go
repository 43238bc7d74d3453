package plan

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestBatchBudgetPricesFromThePlan: after distill plan in the run
// directory, a run in batch mode with a budget prices its batch rows from
// the plan's pilot (said in the log) and sends no online pilot of its own.
func TestBatchBudgetPricesFromThePlan(t *testing.T) {
	t.Parallel()
	stages := []string{job.StageRollout, job.StageDistill, job.StageJudge, job.StageEmpirical}
	srv, job, _ := runtest.BatchSetup(t, 30, sim.Config{KeepLog: true}, stages...)
	// The requests reach the simulated endpoint in process.
	if _, err := Run(context.Background(), job, pipeline.Options{HTTPClient: runtest.InProcess}, Options{Sample: 15}); err != nil {
		t.Fatal(err)
	}
	online := len(srv.Log())
	job.Budget.MaxCostUSD = 10
	var log bytes.Buffer
	rep := runJob(t, job, pipeline.Options{HTTPClient: runtest.InProcess, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if rep.Status != pipeline.StatusFinished {
		t.Fatalf("%s: %s", rep.Status, rep.StopReason)
	}
	if n := len(srv.Log()) - online; n != 0 {
		t.Errorf("%d requests sent online after the plan: a pilot the plan made unneeded", n)
	}
	if !strings.Contains(log.String(), `from="plan.json`) {
		t.Errorf("the log does not say the rows are priced from plan.json:\n%s", log.String())
	}
}
