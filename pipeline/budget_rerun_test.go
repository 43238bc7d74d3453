package pipeline

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
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
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusStopped || rep.StoppedBy != StopBudget {
		t.Fatalf("status %q (%s), want stopped by the budget", rep.Status, rep.StopReason)
	}
	for _, inFlight := range []int{1, 4} {
		j.Limits.ProblemsInFlight = inFlight
		var rerun sendCounter
		again := runJob(t, j, rerun.options())
		if again.Status != StatusStopped || again.StoppedBy != StopBudget {
			t.Errorf("rerun at the same budget, %d problems in flight: status %q (%s), want stopped by the budget", inFlight, again.Status, again.StopReason)
		}
		if sent := rerun.sent.Load(); sent != 0 {
			t.Errorf("rerun at the same budget, %d problems in flight: sent %d requests, want none", inFlight, sent)
		}
	}

	j.Budget.MaxTokens = 25_000
	var raisedRun sendCounter
	if raised := runJob(t, j, raisedRun.options()); raised.Status != StatusStopped || raisedRun.sent.Load() == 0 {
		t.Errorf("rerun with a raised budget: status %q, sent %d requests; want the run to go on, and stop at the judgments again", raised.Status, raisedRun.sent.Load())
	}
}

// sendCounter counts the requests of the run whose client it is, as they
// are sent: exactly that run's, whereas the endpoint's count could also
// take in late a request an earlier run sent and gave up on.
type sendCounter struct{ sent atomic.Int64 }

func (c *sendCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.sent.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// options are run options whose client is counted.
func (c *sendCounter) options() Options { return Options{HTTPClient: &http.Client{Transport: c}} }
