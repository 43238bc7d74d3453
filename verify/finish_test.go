package verify

import "testing"

type finishCase struct {
	line         int
	ok           bool
	want, finish string
	text         string
}

// TestExtractFinish runs testdata/finish.tsv (issue 26): the finish reason, when known, says
// whether a text was cut off; when unknown, only a text that stops inside math, a box or a
// <think> is. A found answer must also compare equal to the text with the same options, and a
// text with no answer must never compare equal, not even to the value it holds.
func TestExtractFinish(t *testing.T) {
	t.Parallel()
	var cases []finishCase
	for _, r := range tsvRows(t, "testdata/finish.tsv", "ok<TAB>want<TAB>finish<TAB>text", 4, 4) {
		f := r.cols[2]
		if f == "-" {
			f = ""
		}
		cases = append(cases, finishCase{line: r.line, ok: r.cols[0] == "1", want: r.cols[1], finish: f, text: unescapeNL(r.cols[3])})
	}
	none := 0
	for _, c := range cases {
		opt := Options{FinishReason: c.finish}
		got, method, ok := ExtractWith(c.text, opt)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("line %d: ExtractWith(%q, finish %q) = %q (%s), %v; want %q, %v", c.line, c.text, c.finish, got, method, ok, c.want, c.ok)
		}
		if c.finish == "" {
			if a, m, ok2 := ExtractMethod(c.text); a != got || m != method || ok2 != ok {
				t.Errorf("line %d: ExtractMethod and ExtractWith with no finish reason disagree", c.line)
			}
		}
		if c.ok {
			if res := CompareWith(c.want, c.text, opt); !res.Equal {
				t.Errorf("line %d: CompareWith(%q, text, finish %q) = not equal (%s, %q), want equal", c.line, c.want, c.finish, res.Method, res.Reason)
			}
			continue
		}
		none++
		for _, gold := range []string{"7", "12", "126", "2", "5", "B", `\frac{1}{2}`, `\frac{5}{8}`, "70", "36"} {
			if res := CompareWith(gold, c.text, opt); res.Equal {
				t.Errorf("line %d: CompareWith(%q, %q, finish %q) = equal by %s; a text with no answer is never equal", c.line, gold, c.text, c.finish, res.Method)
			}
		}
	}
	t.Logf("%d cases, %d without an answer", len(cases), none)
	if 3*none < len(cases) {
		t.Errorf("only %d of %d cases give no answer; want at least a third", none, len(cases))
	}
}
