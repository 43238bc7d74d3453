package discrim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestFoldsStratified: indexes 0..9 with correctness C F F C F C F F F C.
// Correct by index 0 3 5 9 -> folds 0 1 2 3; flawed 1 2 4 6 7 8 -> 0 1 2 3
// 0 1. Added in reverse order, the folds follow the indexes.
func TestFoldsStratified(t *testing.T) {
	correct := []bool{true, false, false, true, false, true, false, false, false, true}
	m := &Matrix{}
	m.Reset(schema.StyleSRaR)
	m.AddItem(1, "SUGGEST", "", 1, 1)
	for idx := 9; idx >= 0; idx-- {
		m.AddRollout(int32(idx), correct[idx], func(int) bool { return false })
	}
	got := map[int32]int32{}
	for r, f := range Folds(m, 4) {
		got[m.Index[r]] = f
	}
	want := map[int32]int32{0: 0, 3: 1, 5: 2, 9: 3, 1: 0, 2: 1, 4: 2, 6: 3, 7: 0, 8: 1}
	for idx, f := range want {
		if got[idx] != f {
			t.Errorf("rollout %d in fold %d; want %d", idx, got[idx], f)
		}
	}
	if w := Without(Folds(m, 4), 0); len(w) != 7 {
		t.Errorf("Without fold 0: %d rollouts; want 7", len(w))
	}
}

// TestWithinGroupAUROC: four rollouts, group 0 holding C 0.9 and F 0.1,
// group 1 C 0.2 and F 0.5. Pooled, 3 of 4 pairs are won; within the
// groups only (0.9, 0.1) and (0.2, 0.5) count: 1 of 2.
func TestWithinGroupAUROC(t *testing.T) {
	m := columns(t, "CFCF", "1010")
	s := NewSample(m, []int{0, 1, 2, 3}, []int32{0, 0, 1, 1})
	scores := []float64{0.9, 0.1, 0.2, 0.5}
	b := NewBoot(1, nil)
	b.Add(RecordSeed("x"), s, [][]float64{scores})
	if e := b.Estimate(0); e.Records != 1 || !near(e.Mean, 0.5) {
		t.Errorf("within groups: %+v; want mean 0.5 over 1 record", e)
	}
	if s.Pairs() != 2 {
		t.Errorf("pairs %d; want 2", s.Pairs())
	}
	pooled := NewBoot(1, nil)
	pooled.Add(RecordSeed("x"), NewSample(m, []int{0, 1, 2, 3}, nil), [][]float64{scores})
	if e := pooled.Estimate(0); !near(e.Mean, 0.75) {
		t.Errorf("one group: %+v; want 0.75", e)
	}
	tied := NewBoot(1, nil)
	tied.Add(1, NewSample(m, []int{0, 1, 2, 3}, nil), [][]float64{{0.3, 0.1 + 0.2, 0.5, 0.5}})
	// (0.3, 0.3) tie, (0.3, 0.5) loss, (0.5, 0.3) win, (0.5, 0.5) tie: 2/4.
	if e := tied.Estimate(0); !near(e.Mean, 0.5) {
		t.Errorf("ties: %+v; want 0.5", e)
	}
}

// noisyRecord is a record of n rollouts (half correct) whose score for a
// correct rollout is drawn from N(shift, 1) and for a flawed one from
// N(0, 1).
func noisyRecord(rng *rand.Rand, n int, shift float64) (*Matrix, []float64) {
	m := &Matrix{}
	m.Reset(schema.StyleSRaR)
	m.AddItem(1, "SUGGEST", "", 1, 1)
	scores := make([]float64, n)
	for r := range n {
		c := r%2 == 0
		m.AddRollout(int32(r), c, func(int) bool { return false })
		scores[r] = rng.NormFloat64()
		if c {
			scores[r] += shift
		}
	}
	return m, scores
}

// TestBootIntervals: over 300 records of 8 rollouts whose true AUROC is
// Φ(1/√2) = 0.760, the mean lies in its interval, which holds the truth and
// is narrower than ±0.05; the same records in another order, or split in
// two and merged, give the same estimate; a difference of a series with
// itself is 0 with the interval [0, 0].
func TestBootIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	type rec struct {
		m      *Matrix
		scores []float64
		seed   uint64
	}
	var recs []rec
	for i := range 300 {
		m, sc := noisyRecord(rng, 8, 1)
		recs = append(recs, rec{m, sc, uint64(i) * 7919})
	}
	run := func(order []int, into *Boot) {
		for _, i := range order {
			r := recs[i]
			into.Add(r.seed, NewSample(r.m, allPositions(8), nil), [][]float64{r.scores})
		}
	}
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	a := NewBoot(1, [][2]int{{0, 0}})
	run(order, a)
	e := a.Estimate(0)
	truth := 0.5 * math.Erfc(-0.5) // Φ(1/√2)
	if !(e.CI95[0] <= e.Mean && e.Mean <= e.CI95[1]) || !(e.CI95[0] < truth && truth < e.CI95[1]) || e.CI95[1]-e.CI95[0] > 0.1 {
		t.Errorf("estimate %+v; want an interval around the mean holding %v, narrower than 0.1", e, truth)
	}
	if d := a.Estimate(1); d.Mean != 0 || d.CI95 != [2]float64{0, 0} {
		t.Errorf("a series minus itself: %+v", d)
	}
	slices.Reverse(order)
	b := NewBoot(1, [][2]int{{0, 0}})
	run(order, b)
	half1, half2 := NewBoot(1, [][2]int{{0, 0}}), NewBoot(1, [][2]int{{0, 0}})
	run(order[:100], half1)
	run(order[100:], half2)
	half1.Merge(half2)
	for _, o := range []*Boot{b, half1} {
		g := o.Estimate(0)
		if g.Records != e.Records || math.Abs(g.Mean-e.Mean) > 1e-12 || math.Abs(g.CI95[0]-e.CI95[0]) > 1e-12 || math.Abs(g.CI95[1]-e.CI95[1]) > 1e-12 {
			t.Errorf("reordered or merged: %+v; want %+v", g, e)
		}
	}
}

// TestBootNullChangeCovered: when before and after are two independent
// scorings of no signal, the interval of the change holds 0 in at least
// 17 of 20 corpora of 60 records.
func TestBootNullChangeCovered(t *testing.T) {
	covered := 0
	for c := range 20 {
		rng := rand.New(rand.NewPCG(uint64(c), 99))
		b := NewBoot(2, [][2]int{{1, 0}})
		for i := range 60 {
			m, before := noisyRecord(rng, 8, 0)
			_, after := noisyRecord(rng, 8, 0)
			b.Add(uint64(c*1000+i), NewSample(m, allPositions(8), nil), [][]float64{before, after})
		}
		if e := b.Estimate(2); e.CI95[0] <= 0 && 0 <= e.CI95[1] {
			covered++
		}
	}
	if covered < 17 {
		t.Errorf("the change's interval held 0 in %d of 20 null corpora; want at least 17", covered)
	}
}

// TestScorerPaysWhatTheSchemesPay by hand: SUGGEST (weight 2), PITFALL,
// BONUS, ANSWER over one correct rollout that meets the SUGGEST, falls into
// the PITFALL, meets the BONUS and the ANSWER (s 1 1 1 1; x 1 0 1 1), and
// one flawed that meets nothing (s 0 0 0 0; x 0 1 0 0).
//
//	srar Δ: 0.8 − 1 + 1 = 0.8 and 0 − 0 + 0 = 0 (ANSWER and weights never count)
//	grounded with ANSWER (weights 2 1 1 1): (2 + 0 + 1 + 1)/5 = 0.8 and 1/5
//	grounded without ANSWER: 3/4 and 1/4
//	rubric score of an srar item stored with weight 0 counts it 1
func TestScorerPaysWhatTheSchemesPay(t *testing.T) {
	m := &Matrix{}
	m.Reset(schema.StyleSRaR)
	for k, typ := range []string{"SUGGEST", "PITFALL", "BONUS", "ANSWER"} {
		w := 1.0
		if k == 0 {
			w = 2
		}
		m.AddItem(int32(k+1), typ, "", w, 0)
	}
	m.AddRollout(0, true, func(int) bool { return true })
	m.AddRollout(1, false, func(int) bool { return false })
	var s Scorer
	v := SourceVersion(m)
	for _, tc := range []struct {
		f    Figure
		want []float64
	}{
		{Figure{Scheme: "srar", WithAnswer: true}, []float64{0.8, 0}},
		{Figure{Scheme: DefaultScheme}, []float64{0.8, 0}},
		{Figure{Scheme: "grounded", WithAnswer: true}, []float64{0.8, 0.2}},
		{Figure{Scheme: "papo", WithAnswer: true}, []float64{0.8, 0.2}},
		{Figure{Scheme: "grounded"}, []float64{0.75, 0.25}},
		{Figure{Scheme: RubricScore}, []float64{0.75, 0.25}},
	} {
		got, ok := s.Scores(nil, m, v, tc.f, []int{0, 1}, nil)
		if !ok || len(got) != 2 || !near(got[0], tc.want[0]) || !near(got[1], tc.want[1]) {
			t.Errorf("%+v: %v (%v); want %v", tc.f, got, ok, tc.want)
		}
	}
	zero := Version{Keep: []int{0, 2}, Weights: []float64{0, 1}}
	if got, _ := s.Scores(nil, m, zero, Figure{Scheme: RubricScore}, []int{0, 1}, nil); !near(got[0], 1) || !near(got[1], 0) {
		t.Errorf("rubric score with a weight-0 srar item: %v; want [1 0] (it counts 1)", got)
	}
	if got, _ := s.Scores(nil, m, zero, Figure{Scheme: "grounded"}, []int{0, 1}, nil); !near(got[0], 1) || !near(got[1], 0) {
		t.Errorf("grounded pays a weight-0 item nothing: %v; want [1 0] (BONUS alone)", got)
	}
	onlyAnswer := Version{Keep: []int{3}, Weights: []float64{1}}
	if _, ok := s.Scores(nil, m, onlyAnswer, Figure{Scheme: "grounded"}, []int{0, 1}, nil); ok {
		t.Error("a rubric of its ANSWER item alone is scored without ANSWER items")
	}
}

// TestLargeSamplesRanked: a record of 40 rollouts (400 pairs, more than
// Add weighs one by one) gets the AUROC of its scores, ties included.
func TestLargeSamplesRanked(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, scores := noisyRecord(rng, 40, 0.5)
	for r := range scores {
		scores[r] = math.Round(scores[r]*2) / 2 // ties
	}
	var pos, neg []float64
	for r, sc := range scores {
		if m.Correct[r] {
			pos = append(pos, sc)
		} else {
			neg = append(neg, sc)
		}
	}
	want, _ := AUROC(pos, neg)
	b := NewBoot(1, nil)
	s := NewSample(m, allPositions(40), nil)
	b.Add(1, s, [][]float64{scores})
	if s.Pairs() != 400 || !near(b.Estimate(0).Mean, want) {
		t.Errorf("pairs %d, AUROC %v; want 400 and %v", s.Pairs(), b.Estimate(0).Mean, want)
	}
}

// TestSameScoresAlike: a figure and the one Same names for it score every
// rollout alike, over random rubrics of both styles with weights 0 to 3 (a
// rubric with nothing to score by pays every rollout 0).
func TestSameScoresAlike(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var s Scorer
	for trial := range 200 {
		style, types := schema.StyleSRaR, []string{"SUGGEST", "PITFALL", "BONUS", "ANSWER"}
		if trial%2 == 1 {
			style, types = schema.StyleFactualProcess, []string{"FACTUAL", "PROCESS"}
		}
		m := &Matrix{}
		m.Reset(style)
		n := 2 + rng.IntN(6)
		for k := range n {
			m.AddItem(int32(k+1), types[rng.IntN(len(types))], "", float64(rng.IntN(4)), 0)
		}
		for r := range 12 {
			m.AddRollout(int32(r), r%3 == 0, func(int) bool { return rng.IntN(2) == 0 })
		}
		v := SourceVersion(m)
		for _, f := range Figures() {
			a, okA := s.Scores(nil, m, v, f, allPositions(12), nil)
			b, okB := s.Scores(nil, m, v, Same(m, v, f), allPositions(12), nil)
			if !okA {
				a = make([]float64, 12)
			}
			if !okB {
				b = make([]float64, 12)
			}
			if !slices.Equal(a, b) {
				t.Fatalf("trial %d %+v: %v (%v) but Same %+v gives %v (%v)", trial, f, a, okA, Same(m, v, f), b, okB)
			}
		}
	}
}
