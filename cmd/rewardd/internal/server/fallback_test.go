package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// shimLabel is the label the trainer shim built from a grounded row's
// extra_info before it knew the grounded payload: the criteria (string
// ids) as a math rubric (integer ids), no passage.
func shimLabel(t *testing.T, lab schema.Label) string {
	t.Helper()
	crit, err := json.Marshal(lab.Grounded.Criteria)
	if err != nil {
		t.Fatal(err)
	}
	return `{"v": "3", "id": "` + lab.ID + `", "scheme": "grounded", "question": ` + mustJSON(t, lab.Question) +
		`, "ground_truth": "", "rubric": ` + string(crit) + `}`
}

// TestUnusableLabelFallsBackToTheCorpus: a label that does not parse (the
// shim's old grounded label) does not fail the sample when the corpus has
// its problem, by the item's problem_id or the label's own id: the sample
// is scored against the corpus's rubric, and the result and the log say
// the label was not used. Without a fallback, the error keeps the label's
// scheme, not srar.
func TestUnusableLabelFallsBackToTheCorpus(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	h, _ := groundedHarness(t, append(labs, rewardtest.DemoLabel()), sim.Config{})
	h.srv.log = newTestLogger(h.logs)
	qid := labs[0].ID
	bad := shimLabel(t, labs[0])
	const want = 5.0 / 8
	check := func(what string, r reward.Result) {
		t.Helper()
		if r.Error != "" || !r.JudgeOK || !rewardtest.Near(r.Reward, want) || r.Scheme != schema.SchemeGrounded || r.ProblemID != qid ||
			!strings.Contains(r.Note, "label") || !strings.Contains(r.Note, "corpus") {
			t.Errorf("%s: %+v; want reward %v from the corpus's rubric, with a note", what, r, want)
		}
	}
	var v1 scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
		{"problem_id": qid, "label": bad, "response": rewardtest.Scored3},                                     // verl/TRL shim: problem_id and the label
		{"label": bad, "response": rewardtest.Scored3},                                                        // the label's own id
		{"problem_id": "nope", "label": strings.Replace(bad, qid, "nope", 1), "response": rewardtest.Scored3}, // nothing to fall back to
		{"problem_id": "sum-2-3", "label": `{"id": "sum-2-3", "rubric": [{"id": 0}]}`, "response": rewardtest.MarkedResponse},
	}}), &v1)
	if len(v1.Results) != 4 {
		t.Fatalf("/v1/score: %+v", v1)
	}
	check("/v1/score by problem_id", v1.Results[0])
	check("/v1/score by the label's id", v1.Results[1])
	if r := v1.Results[2]; r.Scheme != schema.SchemeGrounded || !strings.Contains(r.Error, "items[2].label") || !strings.Contains(r.Error, `"nope"`) {
		t.Errorf("/v1/score without a fallback: %+v; want an error under scheme grounded naming the label and the id", r)
	}
	if r := v1.Results[3]; r.Error != "" || !rewardtest.Near(r.Reward, markedSRaRReward) || r.Note == "" {
		t.Errorf("/v1/score of a math problem with a bad label: %+v", r)
	}

	prompt := "<|im_start|>user\n" + rewardtest.WalQuestion + "<|im_end|>\n<|im_start|>assistant\n"
	var gr getRewardAnswer
	h.post("/get_reward", mustJSON(t, map[string]any{"query": []string{prompt + rewardtest.Scored3 + "<|im_end|>"}, "prompts": []string{prompt}, "labels": []string{bad}}), &gr)
	if len(gr.Rewards) != 1 || !rewardtest.Near(gr.Rewards[0], want) || gr.ExtraLogs["rubric/error"][0] != 0 {
		t.Errorf("/get_reward with the bad label: %+v", gr)
	}
	var slime reward.Result
	h.post("/score", mustJSON(t, map[string]any{"prompt": rewardtest.WalQuestion, "response": rewardtest.Scored3, "label": bad}), &slime)
	check("/score", slime)
	var g struct{ Results []reward.Result }
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": qid, "label": bad, "responses": []string{rewardtest.Scored3, "nothing"}}), &g)
	if len(g.Results) != 2 {
		t.Fatalf("/v1/score_group: %+v", g)
	}
	check("/v1/score_group", g.Results[0])
	if code, out := h.do(http.MethodPost, "/v1/score_group", mustJSON(t, map[string]any{"label": strings.Replace(bad, qid, "nope", 1), "responses": []string{"x"}})); code != http.StatusBadRequest || !strings.Contains(string(out), "label") {
		t.Errorf("/v1/score_group with a bad label and nothing to fall back to: %d %s; want 400", code, out)
	}
	if !strings.Contains(h.logs.String(), "label unusable") {
		t.Errorf("the log does not say a label was not used:\n%s", h.logs)
	}
}

func newTestLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
