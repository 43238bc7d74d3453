package pipeline

import (
	"testing"

	"github.com/rubricforge/rubricforge/llm"
)

// TestVerifyRolloutUsesFinishReason: the rollout stage knows how every rollout ended, so the
// verifier is told, and no guess about a cut-off overrides the fact (issue 26). A rollout the
// model ended itself gives the answer it states, with or without a full stop; one cut off by
// the token limit gives none, even when it holds a complete answer tag.
func TestVerifyRolloutUsesFinishReason(t *testing.T) {
	t.Parallel()
	steps := "### Step 1: Add the two prices\n100 + 26 = 126.\n### Step 2: State the total\n"
	cases := []struct {
		name, content, finish string
		wantAnswer            string
		wantCorrect           bool
	}{
		{"ended without a full stop", steps + "Tom spent 126 dollars on clothes", "stop", "126", true},
		{"unclosed think, then the answer tag", "<think>\n" + steps + "<answer>126</answer>", "stop", "126", true},
		{"answer tag, stopped by the model", steps + "<answer>126</answer>", "stop", "126", true},
		{"answer tag, cut off by the token limit", steps + "<answer>126</answer>\n### Step 3", "length", "", false},
		{"cut off inside a sentence", steps + "Tom spent 126 dollars on", "length", "", false},
		{"ended without a full stop, wrong value", steps + "Tom spent 125 dollars on clothes", "stop", "125", false},
	}
	e := &engine{extract: defaultExtract}
	for _, c := range cases {
		r := e.verifyRollout(0, llm.Choice{Content: c.content, FinishReason: c.finish}, "126", nil)
		if r.ExtractedAnswer != c.wantAnswer || r.Correct != c.wantCorrect {
			t.Errorf("%s: extracted %q, correct %v; want %q, %v", c.name, r.ExtractedAnswer, r.Correct, c.wantAnswer, c.wantCorrect)
		}
		if r.FinishReason != c.finish {
			t.Errorf("%s: the record's finish_reason is %q, want %q", c.name, r.FinishReason, c.finish)
		}
	}
}
