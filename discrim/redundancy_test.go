package discrim

import (
	"math"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestRedundantWordedAlike: two items whose texts are worded alike (a
// paraphrase) and whose verdicts agree within the labels as two gradings
// of one criterion by a 5% judge do are redundant, though over 16
// rollouts their association is no significant finding; the same verdicts
// under texts that share nothing are not. A = C:11111100 F:11000000, B =
// C:11111110 F:10000000: correct na 6, nb 7, nab 6: cov 0.75, spreads 1.5
// and 0.875; flawed na 2, nb 1, nab 1: the same. Within-label phi
// 1.5/√(3·1.75) = 0.655, above 0.5·0.81 = 0.405 (worded alike) and below
// 0.9·0.81 = 0.729; stratified p = (2/8)·(2/8) = 0.0625.
func TestRedundantWordedAlike(t *testing.T) {
	sides := "CCCCCCCCFFFFFFFF"
	build := func(a, b string) *Matrix {
		m := &Matrix{}
		m.Reset(schema.StyleSRaR)
		m.AddItem(1, "SUGGEST", a, 1, 0)
		m.AddItem(2, "SUGGEST", b, 1, 0)
		m.AddItem(3, "ANSWER", "The final answer is 12.", 1, 0)
		cols := []string{"1111110011000000", "1111111010000000", "1111111100000000"}
		for r := range sides {
			m.AddRollout(int32(r), sides[r] == 'C', func(k int) bool { return cols[k][r] == '1' })
		}
		return m
	}
	alike := build("Factors the quadratic before solving for x.", "In other words, factors the quadratic before solving for x.")
	if r := WithinPhi(alike, nil, 0, 1); !near(r, 1.5/math.Sqrt(5.25)) {
		t.Fatalf("within-label phi %v; want 0.655", r)
	}
	if p := StratifiedAssociationP(alike, nil, 0, 1); !near(p, 0.0625) {
		t.Fatalf("stratified p %v; want 0.0625", p)
	}
	if got := pairNames(Measure(alike, nil, Options{}).Redundant); !slices.Equal(got, []string{"AB"}) {
		t.Errorf("worded alike: redundant pairs %v; want [AB]", got)
	}
	apart := build("Factors the quadratic before solving for x.", "Checks the discriminant's sign.")
	if got := pairNames(Measure(apart, nil, Options{}).Redundant); len(got) != 0 {
		t.Errorf("worded apart: redundant pairs %v; want none (the verdicts alone do not show it)", got)
	}
}

// TestTaroneK by hand: smallest attainable p-values 0.001, 0.001, 0.02,
// 0.3. K = 1: three are ≤ 0.05 (more than 1); K = 2: three ≤ 0.025 (more
// than 2); K = 3: two ≤ 0.0167 (at most 3): K = 3, and the family holds
// the two pairs that can reach 0.05/3.
func TestTaroneK(t *testing.T) {
	if k := taroneK([]float64{0.001, 0.001, 0.02, 0.3}, 0.05); k != 3 {
		t.Errorf("Tarone's K %d; want 3", k)
	}
	if k := taroneK(nil, 0.05); k != 1 {
		t.Errorf("Tarone's K of nothing %d; want 1", k)
	}
}

// TestProbLowerByHand: one correct rollout without the item and one flawed
// with it: p_c ~ Beta(1, 2), p_f ~ Beta(2, 1), P(p_c < p_f) = ∫ 2y ·
// 2(y − y²/2) dy = 4/3 − 1/2 = 5/6; the same counts on both sides: 1/2.
func TestProbLowerByHand(t *testing.T) {
	if p := ProbLower(0, 1, 1, 1); !near(p, 5.0/6) {
		t.Errorf("ProbLower(0,1,1,1) = %v; want 5/6", p)
	}
	if p := ProbLower(3, 8, 3, 8); !near(p, 0.5) {
		t.Errorf("ProbLower(3,8,3,8) = %v; want 1/2", p)
	}
	if p := ProbLower(0, 8, 8, 8); p < 0.9999 {
		t.Errorf("ProbLower(0,8,8,8) = %v; want about 1", p)
	}
}
