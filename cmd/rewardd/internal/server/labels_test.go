package server

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestLabelsAsUsersHaveThem posts labels as OpenRLHF and slime users send
// them when label_key points at the answer column: a plain answer is the
// ground truth and the rubric comes from the prompt; a bad label fails only
// its own sample.
func TestLabelsAsUsersHaveThem(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	h := newHarness(t, []schema.Label{lab})
	bad := `{"id": "x", "rubric": []}`
	var got getRewardAnswer
	h.post("/get_reward", mustJSON(t, map[string]any{
		"query":   []string{chatMLPrompt + rewardtest.MarkedResponse, chatMLPrompt + rewardtest.MarkedResponse + " ", chatMLPrompt + rewardtest.MarkedResponse + "  ", chatMLPrompt + rewardtest.MarkedResponse + "\n", chatMLPrompt + rewardtest.MarkedResponse + "\n\n"},
		"prompts": []string{chatMLPrompt, chatMLPrompt, chatMLPrompt, chatMLPrompt, chatMLPrompt},
		"labels":  []any{"5", "6", bad, labelJSON(t, lab), 5},
	}), &got)
	// "5": the answer; "6": another answer, so the response is wrong (r_base
	// 0.1 + Δ 1.4); a bad spec fails its sample alone; a number is an answer.
	want := []float64{markedSRaRReward, 0.1 + 1.4, 0, markedSRaRReward, markedSRaRReward}
	wantErr := []float64{0, 0, 1, 0, 0}
	for i := range want {
		if len(got.Rewards) != len(want) || !rewardtest.Near(got.Rewards[i], want[i]) || got.ExtraLogs["rubric/error"][i] != wantErr[i] {
			t.Fatalf("rewards %v errors %v, want %v and %v", got.Rewards, got.ExtraLogs["rubric/error"], want, wantErr)
		}
	}

	var v1 scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
		{"question": "What is 2+3?", "label": "5", "response": rewardtest.MarkedResponse},
		{"question": "What is 2+3?", "label": bad, "response": rewardtest.MarkedResponse},
	}}), &v1)
	if r := v1.Results; len(r) != 2 || r[0].Error != "" || !rewardtest.Near(r[0].Reward, markedSRaRReward) || !strings.Contains(r[1].Error, "items[1].label") {
		t.Errorf("/v1/score: %+v", r)
	}
	var slime reward.Result
	h.post("/score", mustJSON(t, map[string]any{"prompt": "What is 2+3?", "response": rewardtest.MarkedResponse, "label": "5"}), &slime)
	if slime.Error != "" || !rewardtest.Near(slime.Reward, markedSRaRReward) {
		t.Errorf("/score with the answer as label: %+v", slime)
	}

	// Without a corpus a plain answer has no rubric: that sample says so.
	bare := newHarness(t, nil)
	var none getRewardAnswer
	code, out := bare.do("POST", "/get_reward", mustJSON(t, map[string]any{"query": []string{chatMLPrompt + rewardtest.MarkedResponse}, "labels": []string{"5"}}))
	if code != 200 || !strings.Contains(string(out), `"rubric/error":[1]`) {
		t.Errorf("a plain answer without a corpus: %d %s", code, out)
	}
	_ = none
	if !strings.Contains(bare.logs.String(), "the label is an answer") {
		t.Errorf("the log does not say why:\n%s", bare.logs)
	}
}

// TestPromptTemplates finds problems behind the prompt templates trainers'
// users write: OpenRLHF's input_template "Question: {}\nAnswer:", and a
// "Problem:" line followed by an instruction.
func TestPromptTemplates(t *testing.T) {
	t.Parallel()
	x, _ := NewIndex([]schema.Label{rewardtest.DemoLabel()})
	for _, prompt := range []string{
		"Question: What is 2+3?\nAnswer:",
		"Question: What is 2+3?\nAnswer: ",
		"<|im_start|>user\nQuestion: What is 2+3?\nAnswer:<|im_end|>\n<|im_start|>assistant\n",
		"Problem: What is 2+3?\nPlease reason step by step, and put your final answer within \\boxed{}.",
		"Solve the problem below.\nProblem: What is 2+3?\nShow your work.",
	} {
		if l, ok, err := x.ByPrompt(prompt); !ok || err != nil || l.ID != "sum-2-3" {
			t.Errorf("%q: not found (%v)", prompt, err)
		}
	}
}
