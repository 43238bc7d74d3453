package judge

import (
	"net/http"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
)

// newTestJudge is a judge with the embedded templates over transport (the
// simulated endpoint's, or one wrapping it), asking each request up to
// attempts times with millisecond back-offs.
func newTestJudge(t testing.TB, transport http.RoundTripper, attempts int, meter *llm.Meter, opt Options) *Judge {
	t.Helper()
	j, err := New(rewardtest.Client(t, transport, attempts, meter), rewardtest.Prompts(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// simJudged is a judge of model "simulated" and the simulated endpoint it
// asks, up to 4 times a request.
type simJudged struct {
	judge     *Judge
	simulator *sim.Server
}

func newSimJudged(t testing.TB, cfg sim.Config) simJudged {
	t.Helper()
	simulator := sim.New(cfg)
	return simJudged{judge: newTestJudge(t, simulator.Transport(), 4, llm.NewMeter(nil, llm.Budget{}), Options{Model: "simulated"}), simulator: simulator}
}
