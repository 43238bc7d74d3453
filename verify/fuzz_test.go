package verify

import (
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"", "1", "-5", "1,000", "1{,}000", "\\frac{1}{2}", "\\frac12", "2\\frac{1}{2}", "0.5", "50\\%",
	"1e-3", "10^{-3}", "\\sqrt{2}", "\\sqrt[3]{x}", "\\pi", "e^{i\\pi}", "30^\\circ", "5 \\text{ cm}",
	"\\$5", "(1,2]\\cup[3,\\infty)", "\\{1,2\\}", "(1,2)", "x=1, x=2", "1 \\text{ or } 2", "y=2x+1",
	"x > 2", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "(B)", "\\textbf{(B) } 42", "Yes",
	"x^2+2x+1", "\\sin^2 x", "\\log_2 8", "5!", "\\binom{n}{k}", "\\boxed{5}", "<answer>7</answer>",
	"Final Answer: The final answer is 7.", "\\boxed{", "}{", "\\left(", "((((", "\\frac{", "^^^",
	"x \\in [1,2]", "\\pm 2", "|x|", "\\lfloor x \\rfloor", "2 1/2", "204_5", "\\begin{array}{cc}",
}

// internalError reports whether Compare had to recover from a panic.
func internalError(r Result) bool { return strings.HasPrefix(r.Reason, "internal error") }

func FuzzEqual(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, fuzzSeeds[(i*7+3)%len(fuzzSeeds)])
	}
	f.Fuzz(func(t *testing.T, gold, pred string) {
		r := Compare(gold, pred)
		if internalError(r) {
			t.Fatalf("Compare(%q, %q) recovered a panic: %s", gold, pred, r.Reason)
		}
		if Equal(gold, pred) != r.Equal {
			t.Fatalf("Equal and Compare disagree on (%q, %q)", gold, pred)
		}
		self := Compare(pred, pred)
		if self.Gold != "" && !self.Equal {
			t.Fatalf("Compare(x, x) = false for %q (normalized %q, %s)", pred, self.Gold, self.Reason)
		}
	})
}

func FuzzExtract(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
		f.Add("We find that the value is 3. Final Answer: " + s)
		f.Add("so we get $\\boxed{" + s + "}$.")
	}
	f.Fuzz(func(t *testing.T, text string) {
		a, ok := Extract(text)
		if !ok {
			if a != "" {
				t.Fatalf("Extract(%q) returned %q with ok=false", text, a)
			}
			return
		}
		if a == "" {
			t.Fatalf("Extract(%q) returned an empty answer with ok=true", text)
		}
		for _, part := range strings.Split(a, ", ") {
			if !strings.Contains(text, part) {
				t.Fatalf("Extract(%q) = %q, which is not part of the text", text, a)
			}
		}
	})
}

func FuzzCompare(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(fuzzSeeds[(i*5+1)%len(fuzzSeeds)], "The answer is $\\boxed{"+s+"}$")
	}
	f.Fuzz(func(t *testing.T, gold, pred string) {
		r := Compare(gold, pred)
		if internalError(r) {
			t.Fatalf("Compare(%q, %q) recovered a panic: %s", gold, pred, r.Reason)
		}
		if r.Method == "" {
			t.Fatalf("Compare(%q, %q) gave no method", gold, pred)
		}
		if r.Equal && (r.Gold == "" || r.Pred == "") {
			t.Fatalf("Compare(%q, %q) is equal with an empty side: %+v", gold, pred, r)
		}
		if _, ok := Extract(pred); ok != r.Extracted {
			t.Fatalf("Compare(%q, %q).Extracted = %v, Extract says %v", gold, pred, r.Extracted, ok)
		}
	})
}
