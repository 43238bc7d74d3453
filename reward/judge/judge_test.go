package judge

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestJudgeSharesCallsInFlight checks that a verdict being computed is
// waited for, not asked again, and that a waiter computes it itself when
// the request computing it goes away. It runs in fake time (synctest):
// synctest.Wait lets the second caller reach its wait for the first before
// the first's answer comes or its caller leaves, however loaded the machine.
func TestJudgeSharesCallsInFlight(t *testing.T) {
	for _, leaderLeaves := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) { judgeSharesCallsInFlight(t, leaderLeaves) })
	}
}

func judgeSharesCallsInFlight(t *testing.T, leaderLeaves bool) {
	h := newSimJudged(t, sim.Config{KeepLog: true, Latency: 300 * time.Millisecond})
	lab := rewardtest.DemoLabel()
	r := reward.Analyze(rewardtest.MarkedResponse, lab.GroundTruth)
	leaderCtx, leave := context.WithCancel(context.Background())
	type answer struct {
		v   []schema.Satisfaction
		err error
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	go func() {
		v, err := h.judge.Verdicts(leaderCtx, lab.Question, lab.Rubric, &r)
		first <- answer{v, err}
	}()
	synctest.Wait() // the first call is at the endpoint, which answers in 300 ms of fake time
	if h.simulator.Count() != 1 {
		t.Fatalf("%d requests at the endpoint, want the first call's", h.simulator.Count())
	}
	go func() {
		v, err := h.judge.Verdicts(context.Background(), lab.Question, lab.Rubric, &r)
		second <- answer{v, err}
	}()
	synctest.Wait() // the second call waits for the first
	if leaderLeaves {
		leave()
	}
	a, b := <-first, <-second
	leave()
	if b.err != nil || len(b.v) != len(lab.Rubric) || !b.v[0].Satisfied {
		t.Fatalf("leader leaves %v: the waiter got %v, %v", leaderLeaves, b.v, b.err)
	}
	st := h.judge.Stats()
	switch {
	case !leaderLeaves && (a.err != nil || st.Calls != 1 || h.simulator.Count() != 1 || st.MemHits != 1):
		t.Errorf("shared call: %v, stats %+v, %d requests; want one call and one wait", a.err, st, h.simulator.Count())
	case leaderLeaves && (!errors.Is(a.err, context.Canceled) || st.Calls != 2):
		t.Errorf("leader left: %v, stats %+v; want its error canceled and a second call by the waiter", a.err, st)
	}
}

// TestRubricKey: a rubric's key, hashed once, completes to each response's
// key as hashing all of it does.
func TestRubricKey(t *testing.T) {
	j := newSimJudged(t, sim.Config{KeepLog: true}).judge
	items := rewardtest.SRaRItems()
	rubric := j.rubricKey("What is 2+3?", items)
	for _, response := range []string{rewardtest.TwoSteps, "", rewardtest.MarkedResponse, rewardtest.TwoSteps} {
		if got, want := responseKey(rubric, response), j.key("What is 2+3?", items, response); got != want {
			t.Fatalf("%q: %x, want %x", response, got, want)
		}
	}
	if j.key("What is 2+3?", items, "a") == j.key("What is 2+3?", items[:4], "a") {
		t.Fatal("the key does not cover the items")
	}
}
