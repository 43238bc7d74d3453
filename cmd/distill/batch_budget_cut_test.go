package main

import (
	"bytes"
	"fmt"
	"os"
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
func TestBatchBudgetCutsTheWave(t *testing.T) {
	t.Parallel()
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
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"plan", "--sample", "6"}, common...), &stdout, &stderr); code != exitOK {
				t.Fatalf("plan: exit %d\n%s%s", code, stdout.String(), stderr.String())
			}
			p, err := corpus.ReadPlan(out)
			if err != nil || p.WithSpent == nil {
				t.Fatalf("plan.json: %v %+v", err, p)
			}
			budget := share * p.WithSpent.Value
			code := run(append([]string{"run", "--batch-poll", "10ms", "--max-cost-usd", fmt.Sprintf("%.6f", budget)}, common...), &stdout, &stderr)
			if code != exitStopped && code != exitOK {
				t.Fatalf("run: exit %d\n%s", code, stderr.String())
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
