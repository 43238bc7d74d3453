package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
)

// TestScoreGroupJudgedTogether: with Config.Group a /v1/score_group is
// judged in one judge request holding every response, each in its own
// block, and every response gets the verdicts it gets judged alone (the
// simulated judge reads each block as it reads a single one), mapped back
// by its id whatever the order the request showed them in.
func TestScoreGroupJudgedTogether(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	responses := []string{rewardtest.TwoSteps, rewardtest.MarkedResponse, "The answer is 5. <answer>5</answer>",
		"### Step 1: Guess.\n6. " + sim.SatisfiedMarker(3) + "\n<answer>6</answer>", "### Step 1: Add.\n2+3 = 5.\n### Step 2: Done.\n<answer>5</answer>"}
	body := mustJSON(t, map[string]any{"label": labelJSON(t, lab), "responses": responses})
	together := newHarness(t, nil, func(c *Config, _ *sim.Config) { c.Group = true })
	alone := newHarness(t, nil)
	var g, a struct {
		Results    []reward.Result
		Advantages []reward.Advantage
	}
	together.post("/v1/score_group", body, &g)
	alone.post("/v1/score_group", body, &a)
	requests := 0
	for _, e := range together.simulator.Log() {
		if e.Kind != sim.KindSatisfyGroup {
			t.Errorf("a judge request of kind %s, want satisfy_group", e.Kind)
		}
		requests++
	}
	if requests != 1 {
		t.Errorf("%d judge requests for a group of %d, want 1", requests, len(responses))
	}
	for i := range responses {
		if !g.Results[i].JudgeOK || fmt.Sprint(g.Results[i].Items) != fmt.Sprint(a.Results[i].Items) || g.Results[i].Reward != a.Results[i].Reward {
			t.Errorf("response %d judged together: %+v; alone: %+v", i, g.Results[i].Items, a.Results[i].Items)
		}
	}
}

// TestGroupReplyBrokenByOneResponse: a response that breaks the group's
// judge reply does not fail its group-mates: the group is judged again one
// response at a time, the breaking one alone failing (paid the floor).
func TestGroupReplyBrokenByOneResponse(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	responses := []string{rewardtest.TwoSteps, rewardtest.MarkedResponse, "### Step 1: Add.\n2+3 = 5. " + sim.JudgeFailsMarker + "\n<answer>5</answer>"}
	h := newHarness(t, nil, func(c *Config, _ *sim.Config) { c.Group = true })
	var g struct{ Results []reward.Result }
	h.post("/v1/score_group", mustJSON(t, map[string]any{"label": labelJSON(t, lab), "responses": responses}), &g)
	for i, r := range g.Results {
		if want := i < 2; r.JudgeOK != want {
			t.Errorf("response %d: judge_ok %v (%s), want %v", i, r.JudgeOK, r.JudgeError, want)
		}
	}
}

// TestGroupOverTheJudgeContext: a group whose one judge request does not
// fit the judge's context (HTTP 400, as vLLM answers over max_model_len),
// while each response alone does, is judged one response at a time: a long
// response cannot fail its group-mates by its length.
func TestGroupOverTheJudgeContext(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	long := "### Step 1: Add.\n" + strings.Repeat("We add the two numbers carefully once more. ", 120) + "2+3 = 5.\n<answer>5</answer>"
	responses := []string{long, rewardtest.TwoSteps, rewardtest.MarkedResponse}
	h := newHarness(t, nil, func(c *Config, s *sim.Config) { c.Group = true; s.ContextTokens = 2000 })
	var g struct{ Results []reward.Result }
	h.post("/v1/score_group", mustJSON(t, map[string]any{"label": labelJSON(t, lab), "responses": responses}), &g)
	for i, r := range g.Results {
		if !r.JudgeOK {
			t.Errorf("response %d: judge_ok false (%s)", i, r.JudgeError)
		}
	}
	kinds := map[sim.Kind]int{}
	for _, e := range h.simulator.Log() {
		kinds[e.Kind]++
	}
	if kinds[sim.KindSatisfyGroup] != 1 || kinds[sim.KindSatisfy] != len(responses) {
		t.Errorf("judge requests by kind %v, want the group request (over the context) then one per response", kinds)
	}
}
