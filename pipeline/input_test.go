package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzProblemFromJSON: no input line makes the reader panic, and a line it
// accepts yields a usable problem.
func FuzzProblemFromJSON(f *testing.F) {
	for _, seed := range []string{
		`{"problem": "What is 1+1?", "answer": "2"}`,
		`{"problem": "p", "answer": 3, "id": "x-1", "source": "s", "solution": "r"}`,
		`{"problem": null, "answer": "2"}`,
		`{"problem": ["a"], "answer": "2"}`,
		`{"problem": "  ", "answer": "2"}`,
		`{"problem": "p", "answer": "2", "id": "a\u0001b"}`,
		"{\"problem\": \"\xff\", \"answer\": \"1\"}",
		`[1,2]`, `"str"`, `{`, ``,
	} {
		f.Add(seed)
	}
	in := DefaultJob().Input
	f.Fuzz(func(t *testing.T, line string) {
		p, msg := problemFromJSON([]byte(line), in)
		if msg != "" {
			return
		}
		if strings.TrimSpace(p.Text) == "" || strings.TrimSpace(p.Answer) == "" || p.ID == "" {
			t.Fatalf("accepted an empty field: %+v", p)
		}
		for _, s := range []string{p.Text, p.Answer, p.ID, p.Source, p.Reference} {
			if !utf8.ValidString(s) {
				t.Fatalf("accepted invalid UTF-8: %+v", p)
			}
		}
		if len(p.ID) > maxIDLen {
			t.Fatalf("id longer than %d: %q", maxIDLen, p.ID)
		}
	})
}

func TestProblemIDIsStableAndUnambiguous(t *testing.T) {
	if ProblemID("What is 2+2?", "4") != ProblemID("  What is 2+2?\n", " 4 ") {
		t.Error("the id must not depend on surrounding white space")
	}
	if ProblemID("ab", "c") == ProblemID("a", "bc") {
		t.Error("field boundaries must be part of the id")
	}
	if got := ProblemID("What is 2+2?", "4"); len(got) != 16 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Errorf("id %q is not 16 hex digits", got)
	}
	// Pinned: a different encoding would change every id of every corpus,
	// and resumes would redo all their work.
	if got := ProblemID("What is 2+2?", "4"); got != "3f485be676b9dfc0" {
		t.Errorf("ProblemID changed: %s", got)
	}
}
