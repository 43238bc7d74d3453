package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// rubricatorJSON is a rubricator output in RLCER's format from criteria
// "points:text", with current_score cur.
func rubricatorJSON(cur float64, criteria ...string) string {
	type c struct {
		Category  string  `json:"category"`
		Criterion string  `json:"criterion"`
		Points    float64 `json:"points"`
	}
	out := struct {
		Domain  string  `json:"question_domain"`
		Rubrics []c     `json:"rubrics"`
		Max     float64 `json:"maximum_score"`
		Min     float64 `json:"minimum_score"`
		Current float64 `json:"current_score"`
	}{Domain: "math/arithmetic", Current: cur}
	for _, s := range criteria {
		pts, text, _ := strings.Cut(s, ":")
		var p float64
		fmt.Sscan(pts, &p)
		out.Rubrics = append(out.Rubrics, c{"Reasoning Clarity & Flow", text, p})
		if p > 0 {
			out.Max += p
		} else {
			out.Min += p
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

type loopGroupAnswer struct {
	Results []struct {
		Reward        float64 `json:"reward"`
		JudgeOK       bool    `json:"judge_ok"`
		Correct       bool    `json:"correct"`
		OffPolicy     bool    `json:"off_policy"`
		RubricVersion *int64  `json:"rubric_version"`
		Components    map[string]float64
		Items         []reward.ItemVerdict `json:"items"`
	} `json:"results"`
	Advantages []reward.Advantage         `json:"advantages"`
	Validity   []reward.ItemGroupValidity `json:"validity"`
	Rubricator []reward.RubricatorResult  `json:"rubricator"`
	Guidance   *struct {
		Needed bool      `json:"needed"`
		Best   int       `json:"best"`
		Failed []int32   `json:"failed"`
		Prompt []message `json:"prompt"`
	} `json:"guidance"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// The group of the proposal tests: DemoLabel (items 1-5), so proposed
// criteria are asked about with ids from 6. Proposal A has five criteria
// (judged ids 6-10), B is prose, C has two, the first A's first in other
// words (so judged as 6), the second judged as 11. Responses 0 and 1 are
// correct, 2 and 3 wrong; the markers set the verdicts.
var (
	proposalA = rubricatorJSON(1, "3:Adds the two numbers first", "2:States the operation", "4:Writes an answer",
		"-2:Drops one of the numbers", "-3:Multiplies instead of adding")
	proposalB = "A good answer adds carefully."
	proposalC = rubricatorJSON(9, "1:adds the TWO numbers first", "5:Checks by subtracting")
)

func proposalResponse(correct bool, satisfied ...int32) string {
	answer := "5"
	if !correct {
		answer = "7"
	}
	return "### Step 1: Add.\n2+3 = " + answer + ". " + sim.SatisfiedMarker(satisfied...) + "\n<answer>" + answer + "</answer>"
}

// proposalGroup: id 6 (A1, C1) v = 1 1 0 0: valid; 7 v = 1 0 1 0: corr 0;
// 8 v = 1 1 1 1: std 0; 9 (a penalty) v = 0 0 1 1: valid sign-aware;
// 10 (a penalty) v = 1 1 0 0: invalid sign-aware; 11 (C2) v = 1 0 0 0: valid
// (corr 0.577). Corpus item 5 (ANSWER) is satisfied by the correct ones.
var proposalGroup = []string{
	proposalResponse(true, 6, 7, 8, 10, 11, 5),
	proposalResponse(true, 6, 8, 10, 5),
	proposalResponse(false, 7, 8, 9),
	proposalResponse(false, 8, 9),
}

func proposalRequest(t *testing.T, extra map[string]any) string {
	req := map[string]any{"problem_id": "sum-2-3", "responses": proposalGroup,
		"proposals": []string{proposalA, proposalB, proposalC}}
	for k, v := range extra {
		req[k] = v
	}
	return mustJSON(t, req)
}

// TestScoreGroupProposals: /v1/score_group with RLCER proposals pays each
// rubricator K_valid/K + format (A: 2 of 5 valid + 1; B, prose: 0; C: both
// valid, current_score above its midpoint: 1 + 0), judges every response
// once for the corpus's and the proposals' criteria together, and under
// rlcer pays the reasoner r_cot over the valid proposed criteria (replace)
// or over them and the corpus's valid items (add).
func TestScoreGroupProposals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	before := h.simulator.Count()
	var g loopGroupAnswer
	h.post("/v1/score_group", proposalRequest(t, map[string]any{"scheme": "srar"}), &g)
	if n := h.simulator.Count() - before; n != int64(len(proposalGroup)) {
		t.Errorf("%d judge requests for %d responses with 3 proposals; want one per response", n, len(proposalGroup))
	}
	if len(g.Rubricator) != 3 {
		t.Fatalf("rubricator: %+v, want one result per proposal", g.Rubricator)
	}
	for k, want := range []float64{1 + 2.0/5, 0, 1} {
		if r := g.Rubricator[k]; !rewardtest.Near(r.Reward, want) {
			t.Errorf("proposal %d: %+v, want reward %v", k, r, want)
		}
	}
	a := g.Rubricator[0]
	if !a.FormatOK || a.K != 5 || a.KValid != 2 || g.Rubricator[1].FormatOK || g.Rubricator[1].K != 0 || g.Rubricator[2].FormatOK || g.Rubricator[2].KValid != 2 {
		t.Errorf("rubricator counts %+v", g.Rubricator)
	}
	if len(a.Items) != 5 || a.Items[0].Criterion != "Adds the two numbers first" || !a.Items[0].Valid || a.Items[3].Points != -2 || !a.Items[3].Valid || a.Items[4].Valid {
		t.Errorf("A's items %+v", a.Items)
	}
	for i, r := range g.Results {
		if len(r.Items) != 5 || r.Items[4].ID != 5 {
			t.Errorf("srar result %d: items %+v, want the corpus's five", i, r.Items)
		}
	}

	// rlcer, replace (the default): valid proposed criteria A1 +3, A4 -2,
	// C1 +1, C2 +5: MinValue -2, MaxValue 9.
	h.post("/v1/score_group", proposalRequest(t, map[string]any{"scheme": "rlcer"}), &g)
	wantCot := []float64{(3 + 1 + 5 + 2) / 11.0, (3 + 1 + 2) / 11.0, (-2 + 2) / 11.0, (-2 + 2) / 11.0}
	for i, r := range g.Results {
		if !rewardtest.Near(r.Components["cot"], wantCot[i]) {
			t.Errorf("rlcer, replace: response %d r_cot %v, want %v", i, r.Components["cot"], wantCot[i])
		}
	}
	// add: the corpus's valid items count too; here only item 5 (ANSWER,
	// +1, v = 1 1 0 0) varies with correctness, so MaxValue is 10.
	h.post("/v1/score_group", proposalRequest(t, map[string]any{"scheme": "rlcer", "proposals_mode": "add"}), &g)
	wantCot = []float64{(3 + 1 + 5 + 1 + 2) / 12.0, (3 + 1 + 1 + 2) / 12.0, 0, 0}
	for i, r := range g.Results {
		if !rewardtest.Near(r.Components["cot"], wantCot[i]) {
			t.Errorf("rlcer, add: response %d r_cot %v, want %v", i, r.Components["cot"], wantCot[i])
		}
	}

	h.wantBadRequest("/v1/score_group", proposalRequest(t, map[string]any{"proposals": []int{1}}), "proposals")
	h.wantBadRequest("/v1/score_group", proposalRequest(t, map[string]any{"proposals_mode": "merge"}), "proposals_mode")
}

// TestProposalsJudgeFailureFloor: a response whose judgment failed (the
// same text as a judged one otherwise) never raises a rubricator's reward:
// C2 (v = 1 0 0 ?) would be valid with ? = 0 and is not with ? = 1, so C
// gets 0.5, less than its twin group with the response judged.
func TestProposalsJudgeFailureFloor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	fails := proposalResponse(false) + " " + sim.JudgeFailsMarker
	twin := proposalResponse(false)
	var failed, judged loopGroupAnswer
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": append(slices.Clone(proposalGroup), fails),
		"proposals": []string{proposalA, proposalB, proposalC}}), &failed)
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": append(slices.Clone(proposalGroup), twin),
		"proposals": []string{proposalA, proposalB, proposalC}}), &judged)
	if len(failed.Rubricator) != 3 || len(judged.Rubricator) != 3 {
		t.Fatalf("rubricator %+v / %+v", failed.Rubricator, judged.Rubricator)
	}
	if !rewardtest.Near(failed.Rubricator[2].Reward, 0.5) || !rewardtest.Near(judged.Rubricator[2].Reward, 1) {
		t.Errorf("C: %v with the fifth judgment failed, %v judged; want 0.5 and 1", failed.Rubricator[2].Reward, judged.Rubricator[2].Reward)
	}
	for k := range failed.Rubricator {
		if failed.Rubricator[k].Reward > judged.Rubricator[k].Reward {
			t.Errorf("proposal %d earns %v with a failed judgment, %v judged", k, failed.Rubricator[k].Reward, judged.Rubricator[k].Reward)
		}
	}
}

// TestRubricatorPrompt: POST /v1/rubricator_prompt renders the rubricator's
// prompt for a corpus problem and a response, or for several.
func TestRubricatorPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	var one struct {
		ProblemID string    `json:"problem_id"`
		Messages  []message `json:"messages"`
	}
	h.post("/v1/rubricator_prompt", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "response": rewardtest.TwoSteps}), &one)
	user := one.Messages[len(one.Messages)-1].Content
	if one.ProblemID != "sum-2-3" || !strings.Contains(user, "What is 2+3?") || !strings.Contains(user, rewardtest.TwoSteps) || !strings.Contains(user, `"current_score"`) {
		t.Errorf("prompt %+v", one)
	}
	var many struct {
		Prompts [][]message `json:"prompts"`
	}
	h.post("/v1/rubricator_prompt", mustJSON(t, map[string]any{"question": "What is 2+3?", "responses": []string{"a", "b"}}), &many)
	if len(many.Prompts) != 2 || !strings.Contains(many.Prompts[1][len(many.Prompts[1])-1].Content, "<response>\nb\n</response>") {
		t.Errorf("prompts %+v", many.Prompts)
	}
	h.wantBadRequest("/v1/rubricator_prompt", `{"problem_id": "sum-2-3"}`, "response")
}

// TestScoreGroupGuidance: guide asks for RGR's exploration assessment. Under
// rgr the best response (index 1: every Factual-free criterion but the
// BONUS met) misses item 4, so refinement is needed with a prompt naming
// it; the refined response sent back as off-policy is marked, and the
// advantages are eq. 1 over all four rewards.
func TestScoreGroupGuidance(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	group := []string{proposalResponse(true, 1, 5), proposalResponse(true, 1, 2, 5), proposalResponse(false, 3)}
	var g loopGroupAnswer
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "scheme": "rgr", "responses": group, "guide": true}), &g)
	if g.Guidance == nil {
		t.Fatal("no guidance")
	}
	if !g.Guidance.Needed || g.Guidance.Best != 1 || !slices.Equal(g.Guidance.Failed, []int32{4}) {
		t.Errorf("guidance %+v, want needed, best 1, failed [4]", g.Guidance)
	}
	if n := len(g.Guidance.Prompt); n == 0 || !strings.Contains(g.Guidance.Prompt[n-1].Content, "criterion BONUS") || !strings.Contains(g.Guidance.Prompt[n-1].Content, group[1]) {
		t.Errorf("prompt %+v: want the best response and its failed criterion", g.Guidance.Prompt)
	}

	refined := proposalResponse(true, 1, 2, 4, 5)
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "scheme": "rgr", "responses": append(slices.Clone(group), refined),
		"off_policy": []bool{false, false, false, true}, "guide": true}), &g)
	rewards := make([]float64, len(g.Results))
	for i, r := range g.Results {
		rewards[i] = r.Reward
		if r.OffPolicy != (i == 3) {
			t.Errorf("result %d off_policy %v", i, r.OffPolicy)
		}
	}
	want := reward.GroupAdvantages(rewards, reward.DefaultParams().Epsilon)
	for i, a := range g.Advantages {
		if !rewardtest.Near(a.Outcome, want[i]) {
			t.Errorf("advantage %d %v, want eq. 1 over all G: %v", i, a.Outcome, want[i])
		}
	}
	if g.Guidance == nil || g.Guidance.Best != 1 {
		t.Errorf("guidance with the off-policy member %+v: the off-policy one is never the best", g.Guidance)
	}
	h.wantBadRequest("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": group, "off_policy": []bool{true}}), "off_policy")
	h.wantBadRequest("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": group, "guide": "yes"}), "guide")
	code, _ := h.do(http.MethodPost, "/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": group}))
	if code != http.StatusOK {
		t.Errorf("a plain group: %d", code)
	}
}

// The loops' fields in the bodies the fast group decoder is checked on
// (TestFastGroupLikeEncodingJSON, FuzzDecodeGroup).
func init() {
	groupBodies = append(groupBodies, []struct {
		body string
		fast bool
	}{
		{`{"responses": ["a", "b"], "proposals": ["{\"rubrics\": []}", "prose"], "proposals_mode": "add", "guide": true, "off_policy": [false, true]}`, true},
		{`{"responses": ["a"], "proposals": null, "guide": false, "off_policy": null}`, true},
		{`{"responses": ["a"], "Guide": true}`, false},
		{`{"responses": ["a"], "guide": true, "guide": false}`, false},
	}...)
}

// TestProposalsWithAPanel: with a panel of judges the proposals' criteria
// are asked of every judge in the one request each judge gets per response,
// and the panel's majority rules them as it rules the rubric's: with
// "truth" and a "contrary" judge the panel's votes split, every criterion
// counts against the response, and no proposed criterion varies, so none
// is valid (and no rubricator is paid more than its format).
func TestProposalsWithAPanel(t *testing.T) {
	t.Parallel()
	h := newPanelHarness(t, []schema.Label{rewardtest.DemoLabel()}, "truth", "contrary")
	before := h.simulator.Count()
	var g loopGroupAnswer
	h.post("/v1/score_group", proposalRequest(t, nil), &g)
	if n := h.simulator.Count() - before; n != 2*int64(len(proposalGroup)) {
		t.Errorf("%d requests for %d responses and 2 judges; want one per judge and response", n, len(proposalGroup))
	}
	if len(g.Rubricator) != 3 {
		t.Fatalf("rubricator %+v", g.Rubricator)
	}
	for k, r := range g.Rubricator {
		if r.KValid != 0 || r.Reward != b2f(r.FormatOK) {
			t.Errorf("proposal %d with a split panel: %+v, want no valid criterion", k, r)
		}
	}
	var truth loopGroupAnswer
	newHarness(t, []schema.Label{rewardtest.DemoLabel()}).post("/v1/score_group", proposalRequest(t, nil), &truth)
	for k := range g.Rubricator {
		if g.Rubricator[k].Reward > truth.Rubricator[k].Reward {
			t.Errorf("proposal %d earns %v with the split panel, %v with the truth alone", k, g.Rubricator[k].Reward, truth.Rubricator[k].Reward)
		}
	}
}
