package verify

import (
	"bytes"
	"encoding/json"
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
	"3,75", "1.234,5", "12 345,67", "(1,2)", "3:8", "P:Q = 3:8", "AB = 4, CD = 5", "m=2, n=3; m=4, n=1",
	"答案：7", "所以答案是 **12个**。", "Réponse : 3,5", "4000千克", "3万", "الإجابة: ٧", "अतः उत्तर 12 है।",
	"The answer is 42<|im_end|><|im_start|>user", "\\\\frac{1}{2}", "\\\\begin{pmatrix} 1 \\\\\\\\ 2 \\\\end{pmatrix}",
	"\\frac{\\sqrt2}{2} \\approx 0.707", "(1,2), (1,2), (3,4)", "C. Not A, because A is wrong", "x &lt; 5",
	"Therefore the probability is 3/8.", "If it were 5, maybe 6.", "\\boxed{1} and \\boxed{2}",
	"2\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "3.5m²", "28 per cent", "Answer \\[ 42 \\]",
	// policy 3
	"|x - 1| \\le 2", "3 < |x-3|", "|2x-3|<1", "x \\geq 2 \\text{ and } x \\leq 5", "\\frac123", "\\boxed{25}\\%",
	"\\boxed{25} percent", "2abc + 3", "bca^2 - c^2ab", "cbrt(2)", "log2(8)", "pi/2", "theta + pi", "₹1,50,000",
	"1.500 €", "Ответ: (3 + 4) * 2 = 14 (см)", "14 (см²).", "B. Option A overlooks the overlap, so it cannot be right.",
	"B\nThe area is 12.", "So the total is 42<|im_end", "The answer is 7 [/INST] 8", "Aではなく、Cです", "A가 아니라 C이다",
	"\\sqrt{C}", "2(C)", "<think>The total is 3 + 4 = 7", "So the total is $12 + 5", "The final answer is $\\frac{3}{",
	"So the answer is 15 apples, and", "Natalia sold 48+24 = <<48+24=72>>72 clips.", "<<3+4", "a<<b>>c<<", "The smaller root is \\boxed{2} and the larger root is \\boxed{3}.",
	// policy 5
	"so after 12 turns the total", "So the ordered pair is (3, 5", "The answer is (3, 5", "donc le résultat est **42**.",
	"So the answer is $\\boxed{42}", "\\boxed{42}\n\nQuestion: What is 6 + 7?\nAnswer: 13", "The answer is 42. Wait, let me recount the",
	"The answer is \\boxed{9}.\n\n<think>\nNext", "答えは、1日目に12ページ、2日目に", "x = 5 and y", "\\begin{pmatrix} 1 & 2",
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
		// A text that counts as cut off (it stops inside math, a box or its <think>) equals
		// nothing, itself included.
		self := Compare(pred, pred)
		if self.Gold != "" && !self.Equal && extract(pred, Options{}).cut == "" {
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
		normalized := dropCalculatorNotes(unescapeLatex(cutAtTurnEnd(text)))
		for _, part := range strings.Split(a, ", ") {
			// A percent sign or word after a box joins its answer as \%: \boxed{25} percent is 25\%.
			if !strings.Contains(normalized, part) && !strings.Contains(normalized, strings.TrimSuffix(part, `\%`)) {
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

// FuzzVerifyJSONL feeds arbitrary input to the JSONL reader: it never fails on a reader that
// does not fail, writes exactly one JSON object per input line, and numbers bad lines.
func FuzzVerifyJSONL(f *testing.F) {
	f.Add(`{"gold":"1/2","pred":"0.5"}`+"\n"+`{"id":3,"gold":42,"pred":"The answer is 42."}`, false)
	f.Add("not json\n\n{\"gold\":\"x\"}\n[1]\r\n{\"id\":\"a\",\"gold\":\"3,75\",\"pred\":\"3.75\"}", false)
	f.Add(`{"text":"so \\boxed{5}"}`+"\n"+`{"id":null,"text":7}`, true)
	f.Add("{\"gold\":\"\xff\",\"pred\":\"1\"}\n{\"gold\":\"\\u0000\",\"pred\":\"\\u2028\"}", false)
	f.Fuzz(func(t *testing.T, input string, extract bool) {
		var out bytes.Buffer
		bad := 0
		st, err := VerifyJSONL(strings.NewReader(input), &out, JSONLOptions{Extract: extract, MaxLineBytes: 1 << 12, BadLine: func(int, error) { bad++ }})
		if err != nil {
			t.Fatalf("VerifyJSONL failed on an in-memory input: %v", err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if out.Len() == 0 {
			lines = nil
		}
		if len(lines) != st.Lines || bad != st.Bad {
			t.Fatalf("%d output lines, %d bad reported, stats %+v", len(lines), bad, st)
		}
		for i, l := range lines {
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("output line %d is not JSON: %q: %v", i+1, l, err)
			}
			if n, ok := v["line"]; ok && n != float64(i+1) {
				t.Fatalf("output line %d reports line %v", i+1, n)
			}
		}
	})
}

// FuzzCutOff runs arbitrary texts through the cut-off rule, seeded with the must-still-find
// corpus: a token limit leaves no answer; a text read with an unknown finish reason gives no
// answer that the model's own end ("stop") would not give too (the guesses only take answers
// away); the text after another problem's opening line is all that a new-problem cut drops.
func FuzzCutOff(f *testing.F) {
	for _, c := range loadGroundCorpus(f) {
		f.Add(c.Text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if a, _, ok := ExtractWith(text, Options{FinishReason: "length"}); ok || a != "" {
			t.Fatalf("ExtractWith(%q, length) = %q, %v; want no answer", text, a, ok)
		}
		unknown, _, okUnknown := ExtractWith(text, Options{})
		stop, _, okStop := ExtractWith(text, Options{FinishReason: "stop"})
		if okUnknown && (!okStop || stop != unknown) {
			t.Fatalf("text %q: unknown finish reason gives %q, stop gives %q, %v", text, unknown, stop, okStop)
		}
		if cut := cutAtNewProblem(text); !strings.HasPrefix(text, cut) || cut != text && !newProblemLine(text[len(cut):]) {
			t.Fatalf("cutAtNewProblem(%q) = %q: not the text before a new problem's line", text, cut)
		}
	})
}
