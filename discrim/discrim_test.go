package discrim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// spec is an item for build: type and stored weight.
type spec struct {
	typ    string
	weight float64
	text   string
}

// build makes a matrix from rollout rows "C 101" / "F 011": correctness,
// then the satisfaction verdict s (not x) of each item in order.
func build(t *testing.T, style string, items []spec, rows ...string) *Matrix {
	t.Helper()
	m := &Matrix{}
	m.Reset(style)
	for k, it := range items {
		m.AddItem(int32(k+1), it.typ, it.text, it.weight, 0)
	}
	for r, row := range rows {
		side, sat, ok := strings.Cut(row, " ")
		if !ok || len(sat) != len(items) {
			t.Fatalf("row %q: want %d verdicts", row, len(items))
		}
		m.AddRollout(int32(r), side == "C", func(k int) bool { return sat[k] == '1' })
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestSRaRRecordByHand: SUGGEST, PITFALL, ANSWER over two correct and two
// flawed rollouts.
//
//	s:         S P A     x (PITFALL inverted): S P A
//	r0 C       1 0 1                            1 1 1
//	r1 C       1 1 1                            1 0 1
//	r2 F       0 1 0                            0 0 0
//	r3 F       1 1 0                            1 0 0
//
// edges: S (2/2 − 1/2) = 0.5, P (1/2 − 0/2) = 0.5, A (2/2 − 0/2) = 1.
// scores with ANSWER (/3): r0 1, r1 2/3, r2 0, r3 1/3: every correct beats
// every flawed, AUROC 1. Without ANSWER (/2): r0 1, r1 .5, r2 0, r3 .5:
// wins (1,0) (1,.5) (.5,0), tie (.5,.5): (3 + .5) / 4 = 0.875.
// phi: S,P = (4·1 − 3·1)/√(3·1·1·3) = 1/3; S,A = (4·2 − 3·2)/√(3·1·2·2) =
// 0.577; P,A = (4·1 − 1·2)/√(1·3·2·2) = 0.577: no redundant pair.
func TestSRaRRecordByHand(t *testing.T) {
	m := build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}, {typ: "PITFALL"}, {typ: "ANSWER"}},
		"C 101", "C 111", "F 010", "F 110")
	// The exact definitions (no judge error): over four rollouts a 5%
	// judge's errors would explain one verdict of each item.
	st := Measure(m, nil, Options{JudgeError: -1})
	if st.Unmeasured != Measured || st.Correct != 2 || st.Flawed != 2 {
		t.Fatalf("measured %v with %d correct, %d flawed; want measured, 2 and 2", st.Unmeasured, st.Correct, st.Flawed)
	}
	wantEdge := []float64{0.5, 0.5, 1}
	wantGood := []int{3, 1, 2}
	for i, s := range st.Items {
		if !s.HasEdge || !near(s.Edge, wantEdge[i]) || s.Good != wantGood[i] {
			t.Errorf("item %d: edge %v (has %v), good %d; want %v, %d", s.ID, s.Edge, s.HasEdge, s.Good, wantEdge[i], wantGood[i])
		}
		if s.Saturated || s.Dead || s.Anti {
			t.Errorf("item %d: saturated %v dead %v anti %v; want none", s.ID, s.Saturated, s.Dead, s.Anti)
		}
	}
	if !st.HasAUROC || !near(st.AUROC, 1) {
		t.Errorf("AUROC %v (%v); want 1", st.AUROC, st.HasAUROC)
	}
	if !st.HasAUROCNoAnswer || !near(st.AUROCNoAnswer, 0.875) {
		t.Errorf("AUROC without ANSWER %v (%v); want 0.875", st.AUROCNoAnswer, st.HasAUROCNoAnswer)
	}
	if len(st.Redundant) != 0 {
		t.Errorf("redundant pairs %+v; want none", st.Redundant)
	}
}

// TestPitfallPolarity: a PITFALL every correct rollout falls into and no
// flawed one does has x = 0 on the correct side, x = 1 on the flawed:
// edge 0 − 1 = −1; as a SUGGEST the same verdicts give +1.
func TestPitfallPolarity(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		edge float64
	}{{"PITFALL", -1}, {"SUGGEST", 1}} {
		m := build(t, schema.StyleSRaR, []spec{{typ: tc.typ}}, "C 1", "C 1", "F 0", "F 0")
		st := Measure(m, nil, Options{})
		if got := st.Items[0].Edge; !near(got, tc.edge) {
			t.Errorf("%s: edge %v; want %v", tc.typ, got, tc.edge)
		}
	}
}

// TestAntiBeyondNoise: the one-sided Fisher rule.
//
//	4 correct, 4 flawed; x = 0 on every correct, 1 on every flawed: edge −1,
//	p = C(4,0)·C(4,4)/C(8,4) = 1/70 = 0.0143 ≤ 0.05: anti.
//	4 and 4; x = 1 on 1 correct, 2 flawed: edge 1/4 − 2/4 = −0.25, K = 3,
//	p = [C(3,0)C(5,4) + C(3,1)C(5,3)] / 70 = (5 + 30)/70 = 0.5: negative only.
//	7 correct, 1 flawed; x = 1 only on the flawed: edge −1, K = 1,
//	p = C(1,0)C(7,7)/C(8,7) = 1/8: the counts cannot tell it from chance.
func TestAntiBeyondNoise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rows   []string
		edge   float64
		p      float64
		anti   bool
		aurocs float64
	}{
		{"balanced, all against", []string{"C 0", "C 0", "C 0", "C 0", "F 1", "F 1", "F 1", "F 1"}, -1, 1.0 / 70, true, 0},
		{"balanced, slightly against", []string{"C 1", "C 0", "C 0", "C 0", "F 1", "F 1", "F 0", "F 0"}, -0.25, 0.5, false, 0.375},
		{"lopsided", []string{"C 0", "C 0", "C 0", "C 0", "C 0", "C 0", "C 0", "F 1"}, -1, 0.125, false, 0},
	} {
		m := build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}}, tc.rows...)
		st := Measure(m, nil, Options{})
		s := st.Items[0]
		if !near(s.Edge, tc.edge) || !near(s.AntiP, tc.p) || s.Anti != tc.anti {
			t.Errorf("%s: edge %v p %v anti %v; want %v %v %v", tc.name, s.Edge, s.AntiP, s.Anti, tc.edge, tc.p, tc.anti)
		}
		// "slightly against": correct scores {1,0,0,0}, flawed {1,1,0,0}.
		// Correct 1 vs flawed: tie, tie, win, win = 6 halves; each correct 0:
		// loss, loss, tie, tie = 2 halves, ×3 = 6. (6 + 6) / 32 = 0.375.
		if !near(st.AUROC, tc.aurocs) {
			t.Errorf("%s: AUROC %v; want %v", tc.name, st.AUROC, tc.aurocs)
		}
	}
}

func TestFisherLessByHand(t *testing.T) {
	for _, tc := range []struct {
		gc, nc, gf, nf int
		want           float64
	}{
		{0, 4, 4, 4, 1.0 / 70},
		{1, 4, 2, 4, 35.0 / 70},
		{0, 7, 1, 1, 1.0 / 8},
		// K = 2 of N = 4, nC = 2: P(A=0) = C(2,0)C(2,2)/C(4,2) = 1/6;
		// P(A ≤ 1) = (1 + C(2,1)C(2,1))/6 = 5/6.
		{1, 2, 1, 2, 5.0 / 6},
		{2, 2, 0, 2, 1}, // the whole tail
		{0, 3, 0, 5, 1}, // nothing has x = 1
	} {
		if got := FisherLess(tc.gc, tc.nc, tc.gf, tc.nf); !near(got, tc.want) {
			t.Errorf("FisherLess(%d,%d,%d,%d) = %v; want %v", tc.gc, tc.nc, tc.gf, tc.nf, got, tc.want)
		}
	}
}

func TestOneSideOrNoVerdicts(t *testing.T) {
	all := build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}, {typ: "BONUS"}}, "C 10", "C 10", "C 11")
	st := Measure(all, nil, Options{JudgeError: -1})
	if st.Unmeasured != OnlyCorrect || st.HasAUROC || st.HasAUROCNoAnswer || st.Items[0].HasEdge {
		t.Errorf("only correct: %v, AUROC %v, edge %v; want only_correct and nothing measured", st.Unmeasured, st.HasAUROC, st.Items[0].HasEdge)
	}
	if !st.Items[0].Saturated || st.Items[1].Saturated || st.Items[1].Dead {
		t.Errorf("only correct: saturation needs no correctness: got %+v", st.Items)
	}
	flawed := build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}}, "F 1", "F 0")
	if got := Measure(flawed, nil, Options{}).Unmeasured; got != OnlyFlawed {
		t.Errorf("only flawed: %v", got)
	}
	empty := build(t, schema.StyleSRaR, nil)
	if got := Measure(empty, nil, Options{}).Unmeasured; got != NoItems {
		t.Errorf("no items: %v", got)
	}

	rec := &schema.Record{Style: schema.StyleSRaR,
		Rubric: []schema.Item{{ID: 1, Type: "SUGGEST", Weight: 1, Polarity: 1}, {ID: 2, Type: "PITFALL", Weight: 1, Polarity: -1}},
		Rollouts: []schema.Rollout{
			{Index: 0, Correct: true},
			{Index: 1, Correct: false, Satisfaction: []schema.Satisfaction{{ID: 2}, {ID: 1}}}, // another order
			{Index: 2, Correct: false, Satisfaction: []schema.Satisfaction{{ID: 1}}},          // too few
		}}
	m := FromRecord(nil, rec)
	if m.Rollouts() != 0 || m.Skipped != 3 {
		t.Errorf("FromRecord kept %d rollouts, skipped %d; want 0 and 3", m.Rollouts(), m.Skipped)
	}
	if got := Measure(m, nil, Options{}).Unmeasured; got != NoVerdicts {
		t.Errorf("no verdicts: %v", got)
	}
	rec.Rollouts[0].Satisfaction = []schema.Satisfaction{{ID: 1, Satisfied: true}, {ID: 2, Satisfied: true}}
	m = FromRecord(m, rec)
	if m.Rollouts() != 1 || m.Skipped != 2 || !m.X(0, 0) || m.X(0, 1) {
		t.Errorf("FromRecord: %d rollouts, %d skipped, x %v %v; want 1, 2, true false (PITFALL satisfied)", m.Rollouts(), m.Skipped, m.X(0, 0), m.X(0, 1))
	}
}

// TestConstantVectorsAndRedundancy over sixteen rollouts (8 C, then 8 F):
//
//	A 1111111111111111 saturated   B = A: equal, but constant: not redundant
//	C 0000000000000000 dead        D 1100110011001100   E = D: redundant
//	F 0011001100110011 = not D: within-label phi −1, not redundant.
//
// D, E vary within both labels: within-label phi 1, stratified p =
// (1/70)² = 0.0002; with A, B and C constant only D, E and F are tested
// (3 pairs: adjusted 0.0006).
func TestConstantVectorsAndRedundancy(t *testing.T) {
	m := columns(t, "CCCCCCCCFFFFFFFF", "1111111111111111", "1111111111111111", "0000000000000000",
		"1100110011001100", "1100110011001100", "0011001100110011")
	st := Measure(m, nil, Options{})
	if got, want := pairNames(st.Redundant), []string{"DE"}; !slices.Equal(got, want) {
		t.Fatalf("redundant pairs %v; want %v", got, want)
	}
	if p := st.Redundant[0]; !p.Equal || !near(p.Corr, 1) {
		t.Errorf("DE: equal %v within-label corr %v; want equal, 1", p.Equal, p.Corr)
	}
	if !st.Items[0].Saturated || !st.Items[0].Saturated95 || !st.Items[2].Dead || st.Items[3].Saturated95 {
		t.Errorf("saturated/dead: %+v", st.Items)
	}
	if st.Items[0].Redundant || st.Items[2].Redundant || st.Items[5].Redundant || !st.Items[4].Redundant {
		t.Errorf("redundant flags: A %v C %v F %v E %v; want false false false true", st.Items[0].Redundant, st.Items[2].Redundant, st.Items[5].Redundant, st.Items[4].Redundant)
	}
}

// TestCorrelatedNotEqual over 20 rollouts, even indexes correct: a has
// x = 1 on 0-9, b on 0-10, c on 1-10. Within the labels (exact
// definitions: the 0.9 floor): a, b: correct n 10, na 5, nb 6, nab 5: cov
// 5 − 3 = 2, spreads 2.5 and 2.4; flawed equal: 2.5 each. 4.5/√(5·4.9) =
// 0.909: redundant. a, c: correct nab 4: cov 1.5; flawed equal: 4/5 = 0.8:
// not at the exact floor, but at the 5% judge error's (0.729) it is.
// Saturated95 at 19 of 20 (95%), not at 18.
func TestCorrelatedNotEqual(t *testing.T) {
	col := func(ones ...int) []bool {
		v := make([]bool, 20)
		for _, k := range ones {
			v[k] = true
		}
		return v
	}
	first10 := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	a := col(first10...)
	b := col(append(slices.Clone(first10), 10)...)
	c := col(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	var all19, all18 []int
	for k := range 20 {
		if k != 0 {
			all19 = append(all19, k)
		}
		if k > 1 {
			all18 = append(all18, k)
		}
	}
	d, e := col(all19...), col(all18...)
	cols := [][]bool{a, b, c, d, e}
	m := &Matrix{}
	m.Reset(schema.StyleSRaR)
	for k := range cols {
		m.AddItem(int32(k+1), "SUGGEST", "", 1, 0)
	}
	for r := range 20 {
		m.AddRollout(int32(r), r%2 == 0, func(k int) bool { return cols[k][r] })
	}
	find := func(st RecordStats, a, b int) *Pair {
		for i := range st.Redundant {
			if p := &st.Redundant[i]; p.A == a && p.B == b {
				return p
			}
		}
		return nil
	}
	exact := Measure(m, nil, Options{JudgeError: -1})
	if ab := find(exact, 0, 1); ab == nil || ab.Equal || !near(ab.Corr, 4.5/math.Sqrt(24.5)) {
		t.Errorf("a,b: %+v; want redundant at 0.909", ab)
	}
	if ac := find(exact, 0, 2); ac != nil {
		t.Errorf("a,c at within-label phi 0.8 listed under the exact floor: %+v", ac)
	}
	if ac := find(Measure(m, nil, Options{}), 0, 2); ac == nil || !near(ac.Corr, 0.8) {
		t.Errorf("a,c at 0.8 under the default judge error: %+v; want redundant", ac)
	}
	if !exact.Items[3].Saturated95 || exact.Items[3].Saturated || exact.Items[4].Saturated95 {
		t.Errorf("19/20 saturated95 %v (saturated %v), 18/20 saturated95 %v; want true false false", exact.Items[3].Saturated95, exact.Items[3].Saturated, exact.Items[4].Saturated95)
	}
}

// TestWeights: factual_process weights 3 and 1.
//
//	x:   F P   score (w 3,1)  unit weights
//	C1   1 0   .75             .5
//	C2   0 1   .25             .5
//	F1   0 1   .25             .5
//	F2   0 0   0               0
//
// weighted: (.75,.25) win (.75,0) win (.25,.25) tie (.25,0) win: 3.5/4 =
// 0.875. Unit weights (an srar item stored without a weight counts 1):
// tie win tie win = 3/4 = 0.75. An srar item's stored weight counts like a
// factual_process one (distill refine re-weights srar items, and the
// reward's weighted fraction reads them).
func TestWeights(t *testing.T) {
	weighted := []spec{{typ: "FACTUAL", weight: 3}, {typ: "PROCESS", weight: 1}}
	unweighted := []spec{{typ: "FACTUAL"}, {typ: "PROCESS"}}
	rows := []string{"C 10", "C 01", "F 01", "F 00"}
	for _, tc := range []struct {
		style string
		items []spec
		want  float64
	}{{schema.StyleFactualProcess, weighted, 0.875}, {schema.StyleSRaR, weighted, 0.875}, {schema.StyleSRaR, unweighted, 0.75}} {
		st := Measure(build(t, tc.style, tc.items, rows...), nil, Options{})
		if !near(st.AUROC, tc.want) || !near(st.AUROCNoAnswer, tc.want) {
			t.Errorf("%s %+v: AUROC %v, without ANSWER %v; want %v for both (no ANSWER item)", tc.style, tc.items, st.AUROC, st.AUROCNoAnswer, tc.want)
		}
	}
	// New weights on the same verdicts: PROCESS alone (0, 1) scores C1 0,
	// C2 1 against F1 1, F2 0: pairs (0,1) loss, (0,0) tie, (1,1) tie,
	// (1,0) win = (0 + 1 + 1 + 2) halves / 8 = 0.5.
	m := build(t, schema.StyleSRaR, weighted, rows...)
	if a, ok := AUROCWith(m, nil, []float64{0, 1}); ok {
		t.Errorf("AUROCWith over no rollouts = %v; want undefined", a)
	}
	if a, ok := AUROCWith(m, []int{0, 1, 2, 3}, []float64{0, 1}); !ok || !near(a, 0.5) {
		t.Errorf("AUROCWith PROCESS alone = %v, %v; want 0.5", a, ok)
	}
	if a, ok := AUROCWith(m, []int{0, 1, 2, 3}, []float64{3, 1}); !ok || !near(a, 0.875) {
		t.Errorf("AUROCWith 3, 1 on srar verdicts = %v, %v; want 0.875 (the weights given, not the style's)", a, ok)
	}
	zero := build(t, schema.StyleFactualProcess, []spec{{typ: "FACTUAL", weight: 0}}, "C 1", "F 0")
	if st := Measure(zero, nil, Options{}); st.HasAUROC {
		t.Errorf("weights summing to 0 give AUROC %v; want undefined", st.AUROC)
	}
	onlyAnswer := build(t, schema.StyleSRaR, []spec{{typ: "ANSWER"}}, "C 1", "F 0")
	if st := Measure(onlyAnswer, nil, Options{}); !st.HasAUROC || st.HasAUROCNoAnswer {
		t.Errorf("only ANSWER items: AUROC %v, without ANSWER defined %v; want 1 and undefined", st.AUROC, st.HasAUROCNoAnswer)
	}
}

func TestAUROCTies(t *testing.T) {
	for _, tc := range []struct {
		pos, neg []float64
		want     float64
		ok       bool
	}{
		{[]float64{0.5, 0.5}, []float64{0.5}, 0.5, true},
		{[]float64{1}, []float64{0, 1}, 0.75, true},
		{[]float64{0.1 + 0.2}, []float64{0.3}, 0.5, true}, // equal as numbers, not as floats
		{[]float64{0}, []float64{1}, 0, true},
		{nil, []float64{1}, 0, false},
	} {
		got, ok := AUROC(tc.pos, tc.neg)
		if ok != tc.ok || !near(got, tc.want) {
			t.Errorf("AUROC(%v, %v) = %v, %v; want %v, %v", tc.pos, tc.neg, got, ok, tc.want, tc.ok)
		}
	}
}

// TestSubsetAndSplit: indexes 0..7 with correctness C F C C F F C F, added
// in reverse order. Correct by index 0 2 3 6 -> fit 0 3, held 2 6; flawed
// 1 4 5 7 -> fit 1 5, held 4 7.
func TestSubsetAndSplit(t *testing.T) {
	correct := []bool{true, false, true, true, false, false, true, false}
	m := &Matrix{}
	m.Reset(schema.StyleSRaR)
	m.AddItem(1, "SUGGEST", "", 1, 1)
	for idx := 7; idx >= 0; idx-- {
		// x = 1 on indexes 0, 3 (fit, correct) and 4 (held, flawed).
		m.AddRollout(int32(idx), correct[idx], func(int) bool { return idx == 0 || idx == 3 || idx == 4 })
	}
	fit, held := Split(m)
	indexes := func(pos []int) []int32 {
		var out []int32
		for _, p := range pos {
			out = append(out, m.Index[p])
		}
		slices.Sort(out)
		return out
	}
	if got := indexes(fit); !slices.Equal(got, []int32{0, 1, 3, 5}) {
		t.Errorf("fit %v; want [0 1 3 5]", got)
	}
	if got := indexes(held); !slices.Equal(got, []int32{2, 4, 6, 7}) {
		t.Errorf("held %v; want [2 4 6 7]", got)
	}
	// On fit the item is saturated among correct (2/2) and dead among
	// flawed (0/2): edge 1. On held: correct 0/2, flawed 1/2: edge −0.5.
	if e := Measure(m, fit, Options{}).Items[0].Edge; !near(e, 1) {
		t.Errorf("edge on fit %v; want 1", e)
	}
	st := Measure(m, held, Options{})
	if e := st.Items[0].Edge; !near(e, -0.5) || st.Correct != 2 || st.Flawed != 2 {
		t.Errorf("held: edge %v over %d/%d; want −0.5 over 2/2", e, st.Correct, st.Flawed)
	}
}

// TestNearDuplicates: 14 words (13 bigrams) against the same plus one word
// (14 bigrams, 13 shared): 13/14 = 0.929. "Verify the discriminant is
// computed correctly" (5 bigrams) and "Verify that the discriminant is
// computed correctly" (6, 4 shared): 4/7 = 0.571.
func TestNearDuplicates(t *testing.T) {
	base := "States the quadratic formula and applies it to find both roots of the equation"
	for _, tc := range []struct {
		a, b string
		sim  float64
		dup  bool
	}{
		{base, base + " correctly", 13.0 / 14, true},
		{"Check that the final answer equals 12", "check that the final answer equals 12.", 1, true},
		{"Verify the discriminant is computed correctly", "Verify that the discriminant is computed correctly", 4.0 / 7, false},
		{"Factorises", "factorises!", 1, true},
	} {
		sim, ok := TextSimilarity(tc.a, tc.b)
		if !ok || !near(sim, tc.sim) {
			t.Errorf("similarity(%q, %q) = %v; want %v", tc.a, tc.b, sim, tc.sim)
		}
		m := build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST", text: tc.a}, {typ: "BONUS", text: tc.b}})
		st := Measure(m, nil, Options{})
		if got := len(st.NearDuplicates) == 1; got != tc.dup {
			t.Errorf("%q ~ %q: near duplicate %v; want %v", tc.a, tc.b, got, tc.dup)
		}
	}
	if _, ok := TextSimilarity("", "x"); ok {
		t.Error("an empty text has a similarity")
	}
}

func TestGroundedEdge(t *testing.T) {
	// open mean 3, closed mean 1, weight 2: (3 − 1)/2 = 1.
	if e, ok := GroundedEdge([]float64{2, 4}, []float64{1, 1}, 2); !ok || !near(e, 1) {
		t.Errorf("GroundedEdge = %v, %v; want 1", e, ok)
	}
	if _, ok := GroundedEdge(nil, []float64{1}, 2); ok {
		t.Error("an edge without open-book scores")
	}
	if _, ok := GroundedEdge([]float64{1}, []float64{1}, 0); ok {
		t.Error("an edge over a zero weight")
	}
}

// FuzzTextSimilarity: for any texts the similarity is symmetric, in [0, 1],
// and a text with a word is a near duplicate of itself.
func FuzzTextSimilarity(f *testing.F) {
	f.Add("Checks the sign of the discriminant", "checks the SIGN of the discriminant!")
	f.Add("x", "")
	f.Add("ÉCRIT la réponse 12", "écrit la réponse 12")
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, okA := TextSimilarity(a, b)
		ba, okB := TextSimilarity(b, a)
		if okA != okB || ab != ba || ab < 0 || ab > 1 {
			t.Fatalf("similarity(%q, %q) = %v %v, reversed %v %v", a, b, ab, okA, ba, okB)
		}
		if self, ok := TextSimilarity(a, a); ok && self != 1 {
			t.Fatalf("similarity of %q with itself %v", a, self)
		}
	})
}
