package source

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/job"
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
	in := job.DefaultJob().Input
	f.Fuzz(func(t *testing.T, line string) {
		p, msg := problemFromJSON([]byte(line), Spec{Input: in})
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
