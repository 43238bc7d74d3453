package reward

import (
	"strings"
	"testing"
	"unicode"
)

func TestSilent(t *testing.T) {
	t.Parallel()
	silent := []string{
		"", " \n\t", "<think>\n\n</think>\n\n", "<think>", "<think> ... </think>", `\boxed{}`, `$\boxed{ }$`, `\[ \boxed{\,} \]`,
		"<answer></answer>", "<answer> </answer>", "### Step 1:\n<answer></answer>", "## Step 0 :\n#### Step 12:",
		"<|return|>", "<|im_end|>", "<｜end▁of▁sentence｜>", "<eos>", "</s>", "?", "...", "…", "**Final Answer:** $\\boxed{}$",
		"Answer:", "FINAL  ANSWER", "`` ~ |", `\text{}`, `\mathrm{ }`,
	}
	said := []string{
		"5", "∅", `\boxed{\infty}`, `\infty`, "<answer>A</answer>", "### Step 1: Add.", "No.", "Answer: 5", "The answer",
		"-1", "<think>hmm</think>", "x", "Answers", "finally", "<step n=\"1\">", "<| im_end |>", "=", "+", "🙂", "日本",
		"### Step one:", "Step 1:", `\frac{}{}`, "<answer>0</answer>",
	}
	for _, s := range silent {
		if !Silent(s) {
			t.Errorf("Silent(%q) = false; it says nothing", s)
		}
	}
	for _, s := range said {
		if Silent(s) {
			t.Errorf("Silent(%q) = true; it says something", s)
		}
	}
}

// FuzzSilent: Silent never panics, white space around a silent text keeps
// it silent, and a text with a letter or digit outside any tag, token,
// command or step header is never silent.
func FuzzSilent(f *testing.F) {
	for _, s := range []string{"<think></think>", `$\boxed{ }$`, "### Step 1:\n", "<|return|>", "Answer: 5", "∅", "<a", `\`, "<|", "#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Silent(s)
		if got && !Silent(" "+s+"\n") {
			t.Errorf("Silent(%q), but not with white space around it", s)
		}
		if got && strings.ContainsFunc(s, unicode.IsDigit) && !strings.ContainsAny(s, "<#") {
			t.Errorf("Silent(%q): a digit outside any tag or step header is something said", s)
		}
	})
}
