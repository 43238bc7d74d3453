package reward

import "testing"

// TestAnalyzeWithoutFinishReason pins rewardd's decision (issue 26): a trainer's response has
// no finish reason, so only a response that stops inside math, a box or its <think> counts as
// cut off; a final sentence without its full stop gives its value, and an unclosed <think>
// before the answer tag gives the tag.
func TestAnalyzeWithoutFinishReason(t *testing.T) {
	steps := "### Step 1: Add the prices\n100 + 26 = 126.\n### Step 2: State the total\n"
	cases := []struct {
		name, response string
		extracted      string
		correct        bool
	}{
		{"no full stop", steps + "Tom spent 126 dollars on clothes", "126", true},
		{"unclosed think, then the answer tag", "<think>\n" + steps + "<answer>126</answer>", "126", true},
		{"stops inside math", steps + "So the total is $100 + ", "", false},
		{"stops inside a box", steps + "The answer is \\boxed{12", "", false},
		{"never leaves its reasoning", "<think>\n" + steps + "So the total is 126.", "", false},
	}
	for _, c := range cases {
		r := Analyze(c.response, "126")
		if r.Extracted != c.extracted || r.Correct != c.correct {
			t.Errorf("%s: Analyze = extracted %q, correct %v; want %q, %v", c.name, r.Extracted, r.Correct, c.extracted, c.correct)
		}
	}
}
