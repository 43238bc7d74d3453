package job

import (
	"strings"
	"testing"
)

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
