package pipeline

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm"
)

// The tests of this file hold batch mode to the provider's bill: what the
// simulated provider charged for (sim.Server.Bill) against what the run
// reports and what its budget allows.

// moneyPrices are the prices the money tests charge, per million tokens.
var moneyPrices = map[string]job.Price{"simulated": {Prompt: 100, Completion: 200}}

// billOf prices the provider's bill with the job's prices (batch rows at
// half).
func billOf(srv *sim.Server, prices map[string]job.Price) float64 {
	return srv.Bill().Cost(func(model string, batch bool, prompt, completion int64) float64 {
		p := prices[model]
		c := (float64(prompt)*p.Prompt + float64(completion)*p.Completion) / 1e6
		if batch {
			c *= llm.DefaultBatchRate
		}
		return c
	})
}

// journalBatches counts the provider batches the journal knows.
func journalBatches(t *testing.T, out string) int64 {
	t.Helper()
	states, _ := rowsByStage(t, out)
	ids := map[string]bool{}
	for _, s := range states {
		if s.BatchID != "" {
			ids[s.BatchID] = true
		}
	}
	return int64(len(ids))
}

// TestBatchCreate504IsNotRetriedBlind: a create answered 504 while the
// provider still makes the batch (it lands after the look that follows at
// once) is not created again: the run waits the settle time, finds the
// late batch by its marker and uses it, so the provider made one batch per
// file and billed every row once, as the report says.
func TestBatchCreate504IsNotRetriedBlind(t *testing.T) {
	t.Parallel()
	srv, jb, rows := runtest.BatchSetup(t, 24, sim.Config{BatchCreateLate: 1, BatchCreateLag: 800 * time.Millisecond},
		job.StageRollout, job.StageDistill, job.StageJudge)
	jb.Empirical.Enabled = false
	jb.Prices = moneyPrices
	jb.Batch.CreateSettle = 2 * time.Second
	logs := &runtest.SyncBuffer{}
	rep := runJob(t, jb, Options{Logger: runtest.TextLogger(logs)})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, jb.Out, rows, rep)
	st := srv.BatchStats()
	if made := journalBatches(t, jb.Out); st.BatchesCreated != made {
		t.Errorf("the provider made %d batches, the journal knows %d: a create answered 504 was made again", st.BatchesCreated, made)
	}
	if st.CustomIDsRepeated != 0 || st.RequestsRepeated != 0 {
		t.Errorf("rows billed twice: %+v", st)
	}
	if bill, cost := billOf(srv, moneyPrices), rep.LLM.Total.CostUSD; math.Abs(bill-cost) > 1e-9*math.Max(bill, 1) {
		t.Errorf("the provider billed $%.6f, the report says $%.6f", bill, cost)
	}
	if !strings.Contains(logs.String(), "create_unknown") {
		t.Errorf("no log line says a create's outcome was unknown:\n%s", logs.String())
	}
}
