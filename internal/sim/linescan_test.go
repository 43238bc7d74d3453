package sim

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The expressions the line scans stand for (linescan.go).
var reBoundaryOpenRef = map[string]*regexp.Regexp{
	"solution": regexp.MustCompile(`(?m)^\[solution ([0-9a-f]{16})\][ \t]*$`),
	"response": regexp.MustCompile(`(?m)^\[response ([0-9a-f]{16})\][ \t]*$`),
}

var lineScanSeeds = []string{
	"",
	"[response 0123456789abcdef]",
	"[response 0123456789abcdef]\nThe answer.\n[end of response 0123456789abcdef]\n",
	"Judge this.\n[response 0123456789abcdef] \t\nbody\n",
	"x[response 0123456789abcdef]\n[response 0123456789ABCDEF]\n[response 0123456789abcde]\n[response fedcba9876543210]x\n[response fedcba9876543210]\t\n",
	"[solution 0123456789abcdef]\n[response 00000000000000000]\n\n[response 1111111111111111]",
	"[response 0123456789abcdef",
	"[response ",
	"Criteria:\n1. [id: q1-c1] Names the coupling (weight 2)\n   Expected keywords: coupling; thermal\n   Required elements: (none)\n2. [id: q1-c2] Says why (weight 0.5)  \n\n\n3. [id: x] a (weight 1) (weight 2)\n",
	"10. [id: a]] b (weight 1e-3)\r\n11. [id: ] c (weight 1)\n12.[id: d] e (weight 1)\n 13. [id: f] g (weight 1)\n14. [id: g] h (weight 1) x\n15. [id: h]  (weight 1)",
	"1. [id: a] b (weight 1)\n \t\n\f\n2. [id: c] d (weight 2)\n",
}

// TestBoundaryOpenIsTheExpression: boundaryOpen finds what the
// expression finds, at the same indexes.
func TestBoundaryOpenIsTheExpression(t *testing.T) {
	t.Parallel()
	for _, p := range lineScanSeeds {
		checkBoundaryOpen(t, p)
	}
}

func checkBoundaryOpen(t *testing.T, p string) {
	t.Helper()
	for kind, re := range reBoundaryOpenRef {
		want := re.FindStringSubmatchIndex(p)
		got, ok := boundaryOpen(p, kind)
		if ok != (want != nil) || ok && !slices.Equal(got[:], want) {
			t.Errorf("%s in %q: %v %v, the expression %v", kind, p, got, ok, want)
		}
	}
}

func FuzzBoundaryOpen(f *testing.F) {
	for _, s := range lineScanSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) { checkBoundaryOpen(t, p) })
}

// TestGroundedCriterionLinesAreTheExpression: groundedCriterionLines
// finds the criteria reGroundedCriterion finds, at the same indexes, but
// for a match's end, which stops at its line's end where the expression's
// \s* runs on over lines of white space.
func TestGroundedCriterionLinesAreTheExpression(t *testing.T) {
	t.Parallel()
	for _, p := range lineScanSeeds {
		checkGroundedCriterionLines(t, p)
	}
	if got := parseGroundedCriteria(lineScanSeeds[8]); len(got) != 3 || got[0].ID != "q1-c1" || got[0].Weight != 2 || !slices.Equal(got[0].Keywords, []string{"coupling", "thermal"}) || got[2].Weight != 2 {
		t.Errorf("criteria %+v", got)
	}
}

func checkGroundedCriterionLines(t *testing.T, p string) {
	t.Helper()
	want := reGroundedCriterion.FindAllStringSubmatchIndex(p, -1)
	got := groundedCriterionLines(p)
	if len(got) != len(want) {
		t.Fatalf("%q: %d criteria, the expression %d (%v, %v)", p, len(got), len(want), got, want)
	}
	for i := range want {
		g, w := slices.Clone(got[i]), slices.Clone(want[i])
		if g[1] > w[1] || strings.TrimSpace(p[g[1]:w[1]]) != "" {
			t.Errorf("%q: criterion %d ends at %d, the expression's at %d", p, i, g[1], w[1])
		}
		g[1], w[1] = 0, 0
		if !slices.Equal(g, w) {
			t.Errorf("%q: criterion %d at %v, the expression's at %v", p, i, got[i], want[i])
		}
	}
}

func FuzzGroundedCriterionLines(f *testing.F) {
	for _, s := range lineScanSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) { checkGroundedCriterionLines(t, p) })
}
