package verify

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestClassCases runs the tables of testdata/classes, one per class of input that the held-out
// measurement found missing (issue 7): other languages, unmarked answers, the last marker,
// template junk, choices with commentary, labels, number spellings, relations, several boxes,
// sentences, approximations, over-escaping, repeats. Every rule comes with its must-not-equal
// twin; the test fails when a class has too few of them.
func TestClassCases(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/classes/*.tsv")
	if err != nil || len(files) < 13 {
		t.Fatalf("want the 13 class tables in testdata/classes, found %d (%v)", len(files), err)
	}
	total, totalNot := 0, 0
	for _, path := range files {
		class := strings.TrimSuffix(filepath.Base(path), ".tsv")
		cases := loadEqualTable(t, path)
		notEqual := 0
		for _, c := range cases {
			if !c.want {
				notEqual++
			}
			res := Compare(c.gold, c.pred)
			if res.Equal != c.want {
				t.Errorf("%s line %d: Compare(%q, %q).Equal = %v, want %v (method %s, gold %q, pred %q, reason %q) %s",
					path, c.line, c.gold, c.pred, res.Equal, c.want, res.Method, res.Gold, res.Pred, res.Reason, c.note)
			}
		}
		t.Logf("%-20s %3d equal, %3d not equal", class, len(cases)-notEqual, notEqual)
		if len(cases) < 10 || float64(notEqual) < 0.3*float64(len(cases)) {
			t.Errorf("%s: %d cases, %d must-not-equal; want at least 10 cases and 30%% must-not-equal twins", class, len(cases), notEqual)
		}
		total += len(cases)
		totalNot += notEqual
	}
	t.Logf("%d class cases, %d must-not-equal (%.0f%%)", total, totalNot, 100*float64(totalNot)/float64(total))
}

type solutionCase struct {
	line         int
	ok           bool
	want, method string
	text         string
}

// TestSolutions extracts the answer of whole model solutions (testdata/solutions.tsv) and
// checks how it was found; every solution with an answer must also compare equal to it.
func TestSolutions(t *testing.T) {
	t.Parallel()
	var cases []solutionCase
	for _, r := range tsvRows(t, "testdata/solutions.tsv", "ok<TAB>want<TAB>method<TAB>text", 4, 4) {
		cases = append(cases, solutionCase{line: r.line, ok: r.cols[0] == "1", want: r.cols[1], method: r.cols[2], text: unescapeNL(r.cols[3])})
	}
	methods := map[string]int{}
	for _, c := range cases {
		got, method, ok := ExtractMethod(c.text)
		if ok != c.ok || (ok && (got != c.want || method != c.method)) {
			t.Errorf("line %d: ExtractMethod(%q) = %q, %q, %v; want %q, %q, %v", c.line, c.text, got, method, ok, c.want, c.method, c.ok)
		}
		if a, ok2 := Extract(c.text); a != got || ok2 != ok {
			t.Errorf("line %d: Extract and ExtractMethod disagree", c.line)
		}
		if c.ok {
			methods[c.method]++
			res := Compare(c.want, c.text)
			if !res.Equal || res.Extraction != c.method {
				t.Errorf("line %d: Compare(%q, solution) = %v by %s (extraction %q), want equal by extraction %q", c.line, c.want, res.Equal, res.Method, res.Extraction, c.method)
			}
			if c.method == ByLastSentence && res.Method != ByLastSentence {
				t.Errorf("line %d: an answer from the final sentence must be reported as method %q, got %q", c.line, ByLastSentence, res.Method)
			}
		}
	}
	t.Logf("%d solutions; answers found by %v", len(cases), methods)
	for _, m := range []string{ByTag, ByBox, ByStatement, ByLastSentence} {
		if methods[m] == 0 {
			t.Errorf("no solution exercises extraction by %s", m)
		}
	}
}
