package judgestats

import (
	"math"
	"testing"
)

func TestFleissKappaHandComputed(t *testing.T) {
	cases := []struct {
		name   string
		counts [][]int64 // per item: [valid, invalid] (or more categories)
		want   float64
		items  int64
		ok     bool
	}{
		// Every item's three judges agree; half the items valid:
		// P̄ = 1, p = (1/2, 1/2), P_e = 1/2, κ = (1 - 1/2)/(1/2) = 1.
		{"total agreement", [][]int64{{3, 0}, {0, 3}, {3, 0}, {0, 3}}, 1, 4, true},
		// Two judges: two items agreed, two split. P_i = 1, 1, 0, 0, so
		// P̄ = 1/2; p = (4/8, 4/8), P_e = 1/2; κ = 0: chance level.
		{"chance level", [][]int64{{2, 0}, {0, 2}, {1, 1}, {1, 1}}, 0, 4, true},
		// Two judges who always disagree: P̄ = 0, P_e = 1/2, κ = -1.
		{"always disagree", [][]int64{{1, 1}, {1, 1}}, -1, 2, true},
		// Three judges, the third failed on every item (it rated none):
		// the kappa of the other two. P_i = 1, 1, 0, 1: P̄ = 3/4;
		// p_valid = (2+0+1+2)/8 = 5/8, P_e = 25/64 + 9/64 = 34/64;
		// κ = (48/64 - 34/64)/(30/64) = 14/30 = 7/15.
		{"a judge that always fails", [][]int64{{2, 0}, {0, 2}, {1, 1}, {2, 0}}, 7.0 / 15, 4, true},
		// The same with one item rated by a single judge only (the other
		// failed): it is left out, the rest unchanged.
		{"an item with one rating is left out", [][]int64{{2, 0}, {0, 2}, {1, 1}, {2, 0}, {1, 0}}, 7.0 / 15, 4, true},
		// Fleiss' own layout with 14 raters and 5 categories (the worked
		// example of the Wikipedia article "Fleiss' kappa"): P̄ = 0.378,
		// P_e = 0.2127, κ = 0.2099.
		{"14 raters, 5 categories", [][]int64{
			{0, 0, 0, 0, 14}, {0, 2, 6, 4, 2}, {0, 0, 3, 5, 6}, {0, 3, 9, 2, 0}, {2, 2, 8, 1, 1},
			{7, 7, 0, 0, 0}, {3, 2, 6, 3, 0}, {2, 5, 3, 2, 2}, {6, 5, 2, 1, 0}, {0, 2, 2, 3, 7},
		}, 0.20993070442195522, 10, true},
		// Zero counts: nothing rated, nothing rated twice, every rating in
		// one category (P_e = 1: agreement cannot be told from chance).
		{"no items", nil, 0, 0, false},
		{"all zero", [][]int64{{0, 0}, {0, 0}}, 0, 0, false},
		{"no item rated twice", [][]int64{{1, 0}, {0, 1}}, 0, 0, false},
		{"one category only", [][]int64{{3, 0}, {3, 0}}, 0, 2, false},
	}
	for _, c := range cases {
		k, items, ok := FleissKappa(c.counts)
		if ok != c.ok || items != c.items || (ok && math.Abs(k-c.want) > 1e-12) {
			t.Errorf("%s: FleissKappa = %v, %d items, ok %v; want %v, %d, %v", c.name, k, items, ok, c.want, c.items, c.ok)
		}
	}
}

// TestFleissVotesLeavesFailuresOut: a failed vote is no rating (not a
// "no"), and two judges' Fleiss kappa is close to Cohen's on the same
// table (they differ only in how chance agreement pools the two judges).
func TestFleissVotesLeavesFailuresOut(t *testing.T) {
	yes, no, failed := Vote{OK: true, Yes: true}, Vote{OK: true}, Vote{}
	votes := [][]Vote{{yes, yes, failed}, {no, no, failed}, {yes, no, failed}, {yes, yes, failed}}
	k, items, ok := FleissVotes(votes)
	if !ok || items != 4 || math.Abs(k-7.0/15) > 1e-12 {
		t.Errorf("FleissVotes = %v over %d items (ok %v); want 7/15 over 4, as FleissKappa of the answers alone", k, items, ok)
	}
	// Counting the failures as "no" would give another figure: the third
	// judge would seem to disagree with every yes.
	asNo := [][]int64{{2, 1}, {0, 3}, {1, 2}, {2, 1}}
	if kNo, _, _ := FleissKappa(asNo); math.Abs(kNo-k) < 0.1 {
		t.Errorf("failures counted as no give %v, too close to %v for the test to tell them apart", kNo, k)
	}
}
