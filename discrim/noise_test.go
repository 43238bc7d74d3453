package discrim

import (
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// columns builds a matrix of SUGGEST items from columns of x values over
// rollouts whose sides are given as "C"/"F" letters.
func columns(t *testing.T, sides string, cols ...string) *Matrix {
	t.Helper()
	items := make([]spec, len(cols))
	for k := range items {
		items[k] = spec{typ: "SUGGEST"}
	}
	var rows []string
	for r := range len(sides) {
		var b strings.Builder
		for _, c := range cols {
			if len(c) != len(sides) {
				t.Fatalf("column %q: want %d values", c, len(sides))
			}
			b.WriteByte(c[r])
		}
		rows = append(rows, sides[r:r+1]+" "+b.String())
	}
	return build(t, schema.StyleSRaR, items, rows...)
}

func pairNames(ps []Pair) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(rune('A'+p.A))+string(rune('A'+p.B)))
	}
	return out
}

// TestRedundancyWithinLabels: a pair is redundant when the two items move
// together within the correct and within the flawed rollouts (as RRD's
// within-label correlation), not when each merely follows correctness.
//
//	sides  CCCCCCCC FFFFFFFF
//	A      11111111 00000000   follows correctness exactly
//	B      11111111 00000000   = A: equal vectors, but constant within each label
//	C      11110000 11000000   varies within both labels
//	D      11110000 11000000   = C: a paraphrase
//	E      11110000 11100000   C with one verdict flipped (a noisy paraphrase)
//
// C, E within labels: correct identical (cov .25 = var); flawed na 2, nb 3,
// nab 2 of 8: cov .25 − .25·.375 = .15625, var .1875 and .234375. Pooled:
// cov .203125 / √(.21875 · .2421875) = 0.8825, above 0.9 · (1 − 2·0.05)²
// = 0.729 (the threshold two copies keep under 5% judge flips). The exact
// one-sided stratified test: P(S ≥ 6) = (1/70)·(3/28) = 0.0015.
func TestRedundancyWithinLabels(t *testing.T) {
	m := columns(t, "CCCCCCCCFFFFFFFF",
		"1111111100000000", "1111111100000000", "1111000011000000", "1111000011000000", "1111000011100000")
	st := Measure(m, nil, Options{})
	if got, want := pairNames(st.Redundant), []string{"CD", "CE", "DE"}; !slices.Equal(got, want) {
		t.Fatalf("redundant pairs %v; want %v (A and B only follow correctness)", got, want)
	}
	if st.Items[0].Redundant || st.Items[1].Redundant {
		t.Errorf("A, B flagged redundant: %+v", st.Items[:2])
	}
	if r := WithinPhi(m, nil, 2, 4); r < 0.8824 || r > 0.8826 {
		t.Errorf("within-label phi of C, E = %v; want 0.8825", r)
	}
	if p := StratifiedAssociationP(m, nil, 2, 4); !near(p, 3.0/(70*28)) {
		t.Errorf("stratified p of C, E = %v; want %v", p, 3.0/(70*28))
	}
}

// TestNegativeWithinLabelsNotRedundant: items that move against each
// other within the labels are not redundant however strongly.
func TestNegativeWithinLabelsNotRedundant(t *testing.T) {
	m := columns(t, "CCCCCCCCFFFFFFFF", "1111000011000000", "0000111100110000")
	st := Measure(m, nil, Options{})
	if len(st.Redundant) != 0 {
		t.Errorf("redundant pairs %v for opposite items", pairNames(st.Redundant))
	}
	// correct: cov 0 − 16/8 = −2, spreads 2 and 2; flawed: na nb 2, nab 0:
	// cov −0.5, spreads 1.5: −2.5/3.5 = −0.714.
	if r := WithinPhi(m, nil, 0, 1); !near(r, -2.5/3.5) {
		t.Errorf("within-label phi %v; want −0.714", r)
	}
}

// TestFlipsExplain: the most x = 1 (or x = 0) that judge flips alone give
// an item at a 10% tail: with eps 0.05, P(Bin(8) > 1) = 0.057 ≤ 0.1 and
// P(Bin(8) > 0) = 0.337: 1; P(Bin(16) > 2) = 0.043 and P(Bin(16) > 1) =
// 0.189: 2. With eps 0 flips explain nothing.
func TestFlipsExplain(t *testing.T) {
	for _, tc := range []struct {
		n    int
		eps  float64
		want int
	}{{8, 0.05, 1}, {16, 0.05, 2}, {16, 0, 0}, {1, 0.05, 0}, {0, 0.05, 0}} {
		if got := FlipsExplain(tc.n, tc.eps); got != tc.want {
			t.Errorf("FlipsExplain(%d, %v) = %d; want %d", tc.n, tc.eps, got, tc.want)
		}
	}
}

// TestDeadAndSaturatedTolerateJudgeNoise: over 8 correct and 8 flawed
// rollouts an item good on at most one of each side is dead at the default
// judge error (5%: flips alone explain 1 of 8), bad on at most one of each
// side saturated; with the exact rule (no judge error) only 0 and 16 are.
func TestDeadAndSaturatedTolerateJudgeNoise(t *testing.T) {
	m := columns(t, "CCCCCCCCFFFFFFFF",
		"0000000000000000", "1000000000000000", "0100000000100000", "1110000000000000",
		"1111111111111111", "1111111111111110", "1111111011111110", "1111111111111100")
	type kinds struct{ dead, sat bool }
	for _, tc := range []struct {
		name string
		opt  Options
		want []kinds
	}{
		{"default judge error", Options{}, []kinds{{dead: true}, {dead: true}, {dead: true}, {}, {sat: true}, {sat: true}, {sat: true}, {}}},
		{"exact", Options{JudgeError: -1}, []kinds{{dead: true}, {}, {}, {}, {sat: true}, {}, {}, {}}},
	} {
		st := Measure(m, nil, tc.opt)
		for i, s := range st.Items {
			if got := (kinds{s.Dead, s.Saturated}); got != tc.want[i] {
				t.Errorf("%s: item %d (good on %d of 16): dead %v saturated %v; want %+v", tc.name, i+1, s.Good, s.Dead, s.Saturated, tc.want[i])
			}
		}
	}
}

// TestAntiUnderMultipleComparisons: ten items over 8 correct and 8 flawed
// rollouts. A is against correctness on every rollout (p = 1/12870); B is
// good on 1 correct and 6 flawed (p = [C(7,0)C(9,8) + C(7,1)C(9,7)]/12870 =
// 261/12870 = 0.0203 ≤ 0.05 alone). Benjamini-Hochberg over the record's
// ten items rejects rank 2 only at p ≤ 0.05·2/10 = 0.01: B's negative edge
// is counted, not called anti-discriminative. The eight others follow
// correctness.
func TestAntiUnderMultipleComparisons(t *testing.T) {
	cols := []string{"0000000011111111", "1000000011111100"}
	for range 8 {
		cols = append(cols, "1111111000000001")
	}
	st := Measure(columns(t, "CCCCCCCCFFFFFFFF", cols...), nil, Options{})
	a, b := st.Items[0], st.Items[1]
	if !a.Anti || b.Anti || !(b.Edge < 0) {
		t.Errorf("A anti %v (p %v); B anti %v edge %v (p %v); want A anti, B a negative edge only", a.Anti, a.AntiP, b.Anti, b.Edge, b.AntiP)
	}
	if !near(b.AntiP, 261.0/12870) {
		t.Errorf("B's p %v; want %v (unadjusted)", b.AntiP, 261.0/12870)
	}
}

// TestBenjaminiHochberg by hand: p 0.01, 0.04, 0.03, 0.5 over four tests:
// sorted 0.01 0.03 0.04 0.5, times 4/rank: 0.04 0.06 0.0533 0.5, then the
// running minimum from the top: 0.04 0.0533 0.0533 0.5.
func TestBenjaminiHochberg(t *testing.T) {
	got := BenjaminiHochberg([]float64{0.01, 0.04, 0.03, 0.5})
	want := []float64{0.04, 0.16 / 3, 0.16 / 3, 0.5}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Fatalf("adjusted %v; want %v", got, want)
		}
	}
}

// TestDeadOnEachSide: judge errors must explain an item's x = 1 on each
// side for it to be dead. An item good on the one correct rollout of 32
// and on no flawed one follows correctness (edge 1); over all 32 its one
// x = 1 is what a 5% judge's errors explain, but on the correct side, 1
// of 1 is not (P(Bin(1, 0.05) > 0) = 0.05 ≤ 0.1 explains none). Likewise
// an item bad only on the one flawed rollout is not saturated.
func TestDeadOnEachSide(t *testing.T) {
	sides := "C" + strings.Repeat("F", 31)
	m := columns(t, sides, "1"+strings.Repeat("0", 31), "0"+strings.Repeat("0", 30)+"1")
	st := Measure(m, nil, Options{})
	if a := st.Items[0]; a.Dead || !near(a.Edge, 1) {
		t.Errorf("good on the only correct rollout: dead %v, edge %v; want alive, edge 1", a.Dead, a.Edge)
	}
	if b := st.Items[1]; !b.Dead {
		t.Errorf("good on one flawed rollout of 31: %+v; want dead", b)
	}
	flip := columns(t, strings.Repeat("C", 31)+"F", strings.Repeat("1", 31)+"0")
	if s := Measure(flip, nil, Options{}).Items[0]; s.Saturated {
		t.Errorf("bad on the only flawed rollout: saturated; want not (edge %v)", s.Edge)
	}
}
