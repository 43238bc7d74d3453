package verify

import (
	"strings"
	"testing"
)

type extractCase struct {
	line int
	ok   bool
	want string
	text string
}

func loadExtractCases(t *testing.T) []extractCase {
	var out []extractCase
	for _, r := range tsvRows(t, "testdata/extract.tsv", "ok<TAB>want<TAB>text", 3, 3) {
		out = append(out, extractCase{line: r.line, ok: r.cols[0] == "1", want: r.cols[1], text: unescapeNL(r.cols[2])})
	}
	return out
}

func TestExtractCases(t *testing.T) {
	t.Parallel()
	cases := loadExtractCases(t)
	noAnswer := 0
	for _, c := range cases {
		got, ok := Extract(c.text)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("line %d: Extract(%q) = %q, %v; want %q, %v", c.line, c.text, got, ok, c.want, c.ok)
		}
		if !c.ok {
			noAnswer++
		}
	}
	t.Logf("%d extraction cases, %d without an answer", len(cases), noAnswer)
	if len(cases) < 60 {
		t.Errorf("only %d extraction cases, want at least 60", len(cases))
	}
	if noAnswer < 10 {
		t.Errorf("only %d ok=false extraction cases, want at least 10", noAnswer)
	}
}

// TestLastIndex checks the windowed search against strings.LastIndex, with markers at the
// ends of the text, across a window's start, overlapping themselves and absent.
func TestLastIndex(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 4093)
	texts := []string{"", `\boxed`, `\boxe`, `a\boxed{1} b \boxed{2}`, "#####", "## ## ####",
		pad + `\boxed{1}`, pad[:4093] + `\boxed{1}` + pad[:4090], `\boxed{1}` + pad + pad,
		pad + "#" + "###" + pad, strings.Repeat(`\boxed`, 3000), strings.Repeat("#", 9000)}
	for _, text := range texts {
		for _, sub := range []string{`\boxed`, `\fbox`, "####"} {
			if got, want := lastIndex(text, sub), strings.LastIndex(text, sub); got != want {
				t.Errorf("lastIndex(%.20q... (%d bytes), %q) = %d, want %d", text, len(text), sub, got, want)
			}
		}
	}
}

// TestTurnTokensOpenWithAngle: nextTurnToken looks for tokens only where a '<' stands.
func TestTurnTokensOpenWithAngle(t *testing.T) {
	t.Parallel()
	for _, tok := range turnTokens {
		if tok[0] != '<' {
			t.Fatalf("%q does not start with '<'", tok)
		}
	}
}

// TestNextTurnToken: the earliest token wins, the first listed at a tie, as
// searching for each token in turn finds it.
func TestNextTurnToken(t *testing.T) {
	t.Parallel()
	reference := func(s string) (int, int) {
		best, size := -1, 0
		for _, tok := range turnTokens {
			if i := strings.Index(s, tok); i >= 0 && (best < 0 || i < best) {
				best, size = i, len(tok)
			}
		}
		return best, size
	}
	pieces := append([]string{"", "<", "<|", "x", "|>", "< |end|>", "<answer>5</answer>", "<|end"}, turnTokens[:]...)
	for a := range pieces {
		for b := range pieces {
			for c := range pieces {
				s := pieces[a] + pieces[b] + "y" + pieces[c]
				gi, gn := nextTurnToken(s)
				if wi, wn := reference(s); gi != wi || gn != wn {
					t.Fatalf("nextTurnToken(%q) = %d, %d; want %d, %d", s, gi, gn, wi, wn)
				}
			}
		}
	}
}
