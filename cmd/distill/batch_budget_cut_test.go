package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestBatchBudgetCutsTheWave: after a plan, a batch run whose budget
// covers part of the job spends it on whole problems: each wave is cut to
// what the budget has left for the problems it can carry through every
// stage (priced from the plan), instead of a wave that does not fit being
// held back whole (which stopped such runs with no record at all). The
// provider's bill stays within the budget, and a budget of the whole plan is
// spent, not stopped at two thirds of it.
//
// plan and run are the built distill: the subject is how the run cuts its
// waves, not the pipeline's concurrency (pipeline's batch tests run it
// under the race detector); the endpoint that bills stays in the test.
func TestBatchBudgetCutsTheWave(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "p.jsonl")
	answers := writeProblems(t, input, 48)
	srv, url := startBatchSim(t, answers, 20*time.Millisecond)
	jb := filepath.Join(dir, "job.yaml")
	os.WriteFile(jb, []byte("prices: {simulated: {prompt_per_mtok: 2, completion_per_mtok: 8}}\n"), 0o644)
	price := func(model string, batch bool, prompt, completion int64) float64 {
		c := (float64(prompt)*2 + float64(completion)*8) / 1e6
		if batch {
			c *= llm.DefaultBatchRate
		}
		return c
	}
	for _, share := range []float64{0.6, 1} {
		t.Run(fmt.Sprint(share), func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprint("run-", share))
			common := []string{"--config", jb, "--input", input, "--out", out, "--base-url", url, "--model", "simulated", "--batch", "--quiet"}
			billed := srv.Bill().Cost(price)
			if msg, err := exec.Command(bin, append([]string{"plan", "--sample", "6"}, common...)...).CombinedOutput(); err != nil {
				t.Fatalf("plan: %v\n%s", err, msg)
			}
			p, err := corpus.ReadPlan(out)
			if err != nil || p.WithSpent == nil {
				t.Fatalf("plan.json: %v %+v", err, p)
			}
			budget := share * p.WithSpent.Value
			msg, err := exec.Command(bin, append([]string{"run", "--batch-poll", "10ms", "--max-cost-usd", fmt.Sprintf("%.6f", budget)}, common...)...).CombinedOutput()
			if err != nil && !exitedWith(err, exitStopped) {
				t.Fatalf("run: %v\n%s", err, msg)
			}
			rep, _, err := pipeline.ReadReport(out)
			if err != nil {
				t.Fatal(err)
			}
			bill := srv.Bill().Cost(price) - billed
			t.Logf("budget $%.4f (%.0f%% of the plan's $%.4f): %s, %d records, the run counted $%.4f, the provider billed $%.4f",
				budget, 100*share, p.WithSpent.Value, rep.Status, rep.CorpusRows, rep.LLM.Total.CostUSD, bill)
			if bill > budget*(1+1e-9) {
				t.Errorf("the provider billed $%.4f on a $%.4f budget", bill, budget)
			}
			if rep.CorpusRows == 0 || bill < budget/2 {
				t.Errorf("%d records for $%.4f of a $%.4f budget: the budget was not spent on whole problems", rep.CorpusRows, bill, budget)
			}
		})
	}
}
