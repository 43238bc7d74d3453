package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// hugeLabel is a corpus rubric whose weights are finite but sum past
// float64's range: a response that meets two of its criteria has a weighted
// fraction of Inf/Inf = NaN. A corpus is not read through ParseLabel, so
// the scorer must cope with it.
func hugeLabel() schema.Label {
	items := make([]schema.Item, 3)
	for j := range items {
		items[j] = schema.Item{ID: int32(j + 1), Type: schema.TypeProcess, Text: "Step " + string(rune('a'+j)) + " of the sum.", Weight: 1e308, Polarity: 1}
	}
	return schema.Label{V: schema.SpecVersion, ID: "huge", Scheme: schema.SchemeGrounded, Style: schema.StyleFactualProcess,
		Question: "What is 4+4?", GroundTruth: "8", Rubric: items}
}

// hugeResponse is a correct response the simulated judge finds satisfying
// the items ids of hugeLabel.
func hugeResponse(ids ...int32) string {
	return "### Step 1: Add.\n4+4 = 8. " + sim.SatisfiedMarker(ids...) + "\n<answer>8</answer>"
}

// TestNonFiniteRewardIsTheItemsError: a reward that is not a finite number
// makes that item an error of its own; the batch is answered (200) and the
// other items are scored, through every protocol. In a group the item is
// left out of the group's advantages, which stay finite.
func TestNonFiniteRewardIsTheItemsError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel(), hugeLabel()})

	var got scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
		{"problem_id": "huge", "response": hugeResponse(1, 2)},
		{"problem_id": "huge", "response": hugeResponse(1)},
		{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse},
	}}), &got)
	if r := got.Results[0]; !strings.Contains(r.Error, "not a finite number") || r.Reward != 0 || r.Score != 0 {
		t.Errorf("the NaN item: %+v; want reward 0 and an error saying the reward is not a finite number", r)
	}
	if r := got.Results[1]; r.Error != "" || !r.JudgeOK || r.Reward != 0 {
		t.Errorf("the finite item of the huge rubric: %+v; want scored, 1e308/Inf = 0", r)
	}
	if r := got.Results[2]; r.Error != "" || !rewardtest.Near(r.Reward, markedSRaRReward) {
		t.Errorf("the ordinary item: %+v; want reward %v", r, markedSRaRReward)
	}

	var openrlhf getRewardAnswer
	h.post("/get_reward", mustJSON(t, map[string]any{
		"query":   []string{"What is 4+4?" + hugeResponse(1, 2), "What is 2+3?" + rewardtest.MarkedResponse},
		"prompts": []string{"What is 4+4?", "What is 2+3?"},
	}), &openrlhf)
	if e := openrlhf.ExtraLogs["rubric/error"]; len(e) != 2 || e[0] != 1 || e[1] != 0 || !rewardtest.Near(openrlhf.Rewards[1], markedSRaRReward) {
		t.Errorf("get_reward: %+v; want the first sample an error and the second scored", openrlhf)
	}

	code, body := h.do(http.MethodPost, "/v1/score_group", mustJSON(t, map[string]any{"problem_id": "huge",
		"responses": []string{hugeResponse(1), hugeResponse(1, 2), hugeResponse(2), hugeResponse()}}))
	if code != http.StatusOK {
		t.Fatalf("score_group: %d %s", code, body)
	}
	var g reward.Group
	if err := json.Unmarshal(body, &g); err != nil {
		t.Fatal(err)
	}
	if r := g.Results[1]; !strings.Contains(r.Error, "not a finite number") {
		t.Errorf("score_group: the NaN rollout: %+v; want its own error", r)
	}
	if a := g.Advantages[1]; a.Outcome != 0 || a.Total != 0 || len(a.Steps) != 0 {
		t.Errorf("score_group: the NaN rollout's advantage %+v, want 0", a)
	}
	// The others score 0, 0, 0 (1e308/Inf): no variation, advantage 0.
	for _, i := range []int{0, 2, 3} {
		r, a := g.Results[i], g.Advantages[i]
		if r.Error != "" || r.Reward != 0 || math.IsNaN(a.Total) || a.Total != 0 {
			t.Errorf("score_group: rollout %d: %+v, advantage %+v; want scored 0 with advantage 0", i, r, a)
		}
	}
}
