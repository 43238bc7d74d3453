package judgestats

import (
	"math"
	"testing"
)

const tol = 1e-9

func near(a, b float64) bool { return math.Abs(a-b) < tol }

// TestWilson checks the Wilson interval against hand computations. With z
// = 1.959963984540054, z² = 3.841458820694124:
//
//	8 of 10: centre (8 + 1.920729410)/13.841458821 = 0.716736, half-width
//	z/13.841458821·√(8·2/10 + 0.960364705) = 0.141600·1.600114 = 0.226577,
//	so [0.490160, 0.943313] (the textbook 0.4902-0.9433).
//	0 of 10: centre = half-width = 1.920729410/13.841458821 = 0.138768, so
//	[0, 0.277537].
//	10 of 10: the mirror image, [0.722463, 1].
func TestWilson(t *testing.T) {
	tests := []struct {
		k, n      int64
		low, high float64
		ok        bool
	}{
		{8, 10, 0.4901624, 0.9433178, true},
		{0, 10, 0, 0.2775327, true},
		{10, 10, 0.7224673, 1, true},
		{0, 0, 0, 0, false}, // nothing judged: no interval
	}
	for _, tt := range tests {
		iv, ok := Wilson(tt.k, tt.n, Z95)
		if ok != tt.ok || math.Abs(iv.Low-tt.low) > 1e-6 || math.Abs(iv.High-tt.high) > 1e-6 {
			t.Errorf("Wilson(%d, %d) = %+v, %v; want [%.7f, %.7f], %v", tt.k, tt.n, iv, ok, tt.low, tt.high, tt.ok)
		}
	}
}

// TestSensitivitySpecificity: people are the truth, "valid" the positive
// class. Table A: people called 50 items valid, the judge agreed on 40
// (Se = 40/50 = 0.8); people called 50 invalid, the judge agreed on 45
// (Sp = 45/50 = 0.9).
func TestSensitivitySpecificity(t *testing.T) {
	tests := []struct {
		name         string
		t            Table
		se, sp       float64
		seOK, spOK   bool
		m1, m0, both int64
	}{
		{"table A", Table{40, 10, 5, 45}, 0.8, 0.9, true, true, 50, 50, 100},
		{"people called nothing invalid", Table{7, 3, 0, 0}, 0.7, 0, true, false, 10, 0, 10},
		{"people called nothing valid", Table{0, 0, 1, 4}, 0, 0.8, false, true, 0, 5, 5},
		{"no labels", Table{}, 0, 0, false, false, 0, 0, 0},
	}
	for _, tt := range tests {
		se, seOK := tt.t.Sensitivity()
		sp, spOK := tt.t.Specificity()
		if !near(se, tt.se) || seOK != tt.seOK || !near(sp, tt.sp) || spOK != tt.spOK {
			t.Errorf("%s: Se %v (%v), Sp %v (%v); want %v (%v), %v (%v)", tt.name, se, seOK, sp, spOK, tt.se, tt.seOK, tt.sp, tt.spOK)
		}
		if tt.t.PeopleValid() != tt.m1 || tt.t.PeopleInvalid() != tt.m0 || tt.t.Labelled() != tt.both {
			t.Errorf("%s: m1 %d m0 %d labelled %d; want %d %d %d", tt.name, tt.t.PeopleValid(), tt.t.PeopleInvalid(), tt.t.Labelled(), tt.m1, tt.m0, tt.both)
		}
	}
}

// TestCorrect checks the corrected rate and its interval on hand-computed
// tables (z = 1.959963984540054, z²/2 = 1.920729410).
//
// Table A (Se 0.8, Sp 0.9, J = 0.7), 700 of 1,000 judged valid (p = 0.7):
//
//	θ = (0.7 + 0.9 - 1)/0.7 = 0.6/0.7 = 0.857142857.
//	Adjusted: p̃ = 701.920729/1003.841459 = 0.699234648, S̃e = 41.920729/53.841459
//	= 0.778595720, S̃p = 46.920729/53.841459 = 0.871460960, J̃ = 0.650056681,
//	θ̃ = (0.699234648 + 0.871460960 - 1)/0.650056681 = 0.877916689.
//	Var = [0.699235·0.300765/1003.84 + 0.877917²·0.778596·0.221404/53.8415
//	+ 0.122083²·0.871461·0.128539/53.8415]/0.650057² = 0.006408784,
//	half-width 1.959964·√0.006408784 = 0.156904678:
//	[0.721012011, 1.034821] -> [0.721012011, 1].
//
// A perfect judge (Se = Sp = 1 on 50 + 50 labels), 700 of 1,000: θ = p =
// 0.7. Adjusted S̃e = S̃p = 51.920729/53.841459 = 0.964326200, J̃ =
// 0.928652401, θ̃ = 0.714541682, half-width 0.051168721:
// [0.663372962, 0.765710403]. The people's sample still widens it.
//
// Table A with 950 of 1,000 judged valid: θ = (0.95 + 0.9 - 1)/0.7 = 1.214,
// more than a judge with Se 0.8 can report for any true rate: clipped to
// 1. θ̃ = 1.261 is clipped to 1 before the half-width 0.171900122 is
// taken off: [0.828099878, 1].
//
// Table A with 50 of 1,000 judged valid: θ = (0.05 - 0.1)/0.7 < 0: 0.
func TestCorrect(t *testing.T) {
	tableA := Table{ValidValid: 40, ValidInvalid: 10, InvalidValid: 5, InvalidInvalid: 45}
	tests := []struct {
		name          string
		valid, judged int64
		t             Table
		rate          float64
		low, high     float64
		clipped       bool
	}{
		{"table A", 700, 1000, tableA, 0.6 / 0.7, 0.721012011, 1, false},
		{"perfect judge", 700, 1000, Table{50, 0, 0, 50}, 0.7, 0.663372962, 0.765710403, false},
		{"raw rate above what the judge can report", 950, 1000, tableA, 1, 0.828099878, 1, true},
		{"raw rate below what the judge can report", 50, 1000, tableA, 0, 0, -1, true},
	}
	for _, tt := range tests {
		c, why := Correct(tt.valid, tt.judged, tt.t, Z95)
		if why != "" {
			t.Errorf("%s: undefined (%s)", tt.name, why)
			continue
		}
		if !near(c.Rate, tt.rate) || c.Clipped != tt.clipped {
			t.Errorf("%s: rate %v clipped %v; want %v, %v", tt.name, c.Rate, c.Clipped, tt.rate, tt.clipped)
		}
		if math.Abs(c.CI.Low-tt.low) > 1e-8 || tt.high >= 0 && math.Abs(c.CI.High-tt.high) > 1e-8 {
			t.Errorf("%s: interval %+v; want [%.9f, %.9f]", tt.name, c.CI, tt.low, tt.high)
		}
		if c.CI.Low > c.Rate || c.CI.High < c.Rate || c.CI.Low < 0 || c.CI.High > 1 {
			t.Errorf("%s: interval %+v does not hold the estimate %v within [0, 1]", tt.name, c.CI, c.Rate)
		}
	}
}

// TestCorrectUndefined: the degenerate cases give a reason, never a
// number. A judge no better than chance is decided on the counts: Se 0.7
// and Sp 0.3 (7 of 10 and 3 of 10) sum to 1 exactly, though 0.7 + 0.3 - 1
// in floating point is not 0; 7·10 + 3·10 = 100 = 10·10.
func TestCorrectUndefined(t *testing.T) {
	tests := []struct {
		name          string
		valid, judged int64
		t             Table
		want          Undefined
	}{
		{"chance: Se 0.7 + Sp 0.3 = 1", 60, 100, Table{7, 3, 7, 3}, NoBetterThanChance},
		{"chance: Se 0.6 + Sp 0.4 = 1", 60, 100, Table{30, 20, 30, 20}, NoBetterThanChance},
		{"worse than chance: Se 0.2 + Sp 0.3", 60, 100, Table{2, 8, 7, 3}, NoBetterThanChance},
		{"no judged item in the corpus", 0, 0, Table{40, 10, 5, 45}, NoJudgedItems},
		{"no labels", 60, 100, Table{}, NoLabels},
		{"people called nothing invalid", 60, 100, Table{9, 1, 0, 0}, NoPeopleInvalid},
		{"people called nothing valid", 60, 100, Table{0, 0, 2, 8}, NoPeopleValid},
	}
	for _, tt := range tests {
		c, why := Correct(tt.valid, tt.judged, tt.t, Z95)
		if why != tt.want || c != (Corrected{}) {
			t.Errorf("%s: %+v, %q; want no estimate and %q", tt.name, c, why, tt.want)
		}
		if why.Explain() == string(why) {
			t.Errorf("%s: %q has no explanation", tt.name, why)
		}
	}
}

// TestCorrectBarelyBetterThanChance: Se 1 (1 of 1) and Sp 0.1 (1 of 10),
// J = 0.1 (1·10 + 1·1 = 11 > 10), is defined, but on so few labels the
// adjusted J̃ = 2.92/4.84 + 2.92/13.84 - 1 = 0.603 + 0.211 - 1 < 0 is not
// positive: the interval is all of [0, 1] and says so.
func TestCorrectBarelyBetterThanChance(t *testing.T) {
	c, why := Correct(60, 100, Table{1, 0, 9, 1}, Z95)
	if why != "" || !c.Wide || c.CI != (Interval{0, 1}) {
		t.Errorf("got %+v, %q; want a defined rate with the interval [0, 1] marked wide", c, why)
	}
}

// TestTableAdd: each pair of verdicts lands in its own cell, people's
// verdict first.
func TestTableAdd(t *testing.T) {
	var tab Table
	tab.Add(true, true)
	tab.Add(true, false)
	tab.Add(true, false)
	tab.Add(false, true)
	tab.Add(false, true)
	tab.Add(false, true)
	tab.Add(false, false)
	if want := (Table{ValidValid: 1, ValidInvalid: 2, InvalidValid: 3, InvalidInvalid: 1}); tab != want {
		t.Errorf("table %+v; want %+v", tab, want)
	}
}
