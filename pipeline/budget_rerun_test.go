package pipeline

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// A run stopped by its budget stops again at once, and sends nothing,
// until the budget is raised (docs/budgets.md), although what the budget
// has left would pay for the first requests of problems the stopped
// session never started: the first problem's judgment does not fit (the
// judge's max_tokens is reserved for it), the next problems' distill and
// rollout requests would. Run again as it was, and with more problems in
// flight.
func TestRunBudgetStoppedRerunSendsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, sim.Config{})
	j := f.job
	j.Judge.MaxTokens = 50_000 // reserved by a judgment before the judge's first answer: none fits
	j.Budget.MaxTokens = 20_000
	j.Limits.ProblemsInFlight = 1
	rep := runJob(t, j, Options{})
	if rep.Status != StatusStopped || rep.StoppedBy != StopBudget {
		t.Fatalf("status %q (%s), want stopped by the budget", rep.Status, rep.StopReason)
	}
	for _, inFlight := range []int{1, 4} {
		j.Limits.ProblemsInFlight = inFlight
		before := f.srv.Count()
		again := runJob(t, j, Options{})
		if again.Status != StatusStopped || again.StoppedBy != StopBudget {
			t.Errorf("rerun at the same budget, %d problems in flight: status %q (%s), want stopped by the budget", inFlight, again.Status, again.StopReason)
		}
		if sent := f.srv.Count() - before; sent != 0 {
			t.Errorf("rerun at the same budget, %d problems in flight: sent %d requests, want none", inFlight, sent)
		}
	}

	j.Budget.MaxTokens = 25_000
	before := f.srv.Count()
	if raised := runJob(t, j, Options{}); raised.Status != StatusStopped || f.srv.Count() == before {
		t.Errorf("rerun with a raised budget: status %q, sent %d requests; want the run to go on, and stop at the judgments again", raised.Status, f.srv.Count()-before)
	}
}
