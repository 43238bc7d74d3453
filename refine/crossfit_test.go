package refine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// sideMatrix builds a matrix from item columns over rollouts whose sides
// are given as "C"/"F" letters, in index order; each column is the items'
// good-side values.
func sideMatrix(t *testing.T, style, sides string, types []string, cols ...string) *discrim.Matrix {
	t.Helper()
	m := &discrim.Matrix{}
	m.Reset(style)
	for k, typ := range types {
		m.AddItem(int32(k+1), typ, fmt.Sprintf("item %d", k+1), 1, schema.PolarityOf(typ))
	}
	for r := range len(sides) {
		m.AddRollout(int32(r), sides[r] == 'C', func(k int) bool {
			if len(cols[k]) != len(sides) {
				t.Fatalf("column %q: want %d values", cols[k], len(sides))
			}
			return (cols[k][r] == '1') != m.Items[k].Pitfall
		})
	}
	return m
}

// TestEveryRecordWithBothSidesIsRefined: a record of 8 rollouts with one
// correct is refined (the rules decide on all 8), and it has a held-out
// figure: its only correct rollout is in fold 0, whose rubric is fit on
// the other folds, which hold no correct rollout, so that fold keeps the
// source rubric and the held-out change is 0.
func TestEveryRecordWithBothSidesIsRefined(t *testing.T) {
	t.Parallel()
	m := sideMatrix(t, schema.StyleSRaR, "CFFFFFFF", []string{"SUGGEST", "SUGGEST", "SUGGEST", "ANSWER"},
		"10000000", "11111111", "10100000", "10000000")
	d := Decide("one-correct", m, DefaultOptions())
	if d.Unmeasured != "" {
		t.Fatalf("unmeasured %q; want refined", d.Unmeasured)
	}
	if d.Items[1].Drop != DropSaturated {
		t.Errorf("item 2 (good on every rollout): %+v; want saturated", d.Items[1])
	}
	f := d.Held.Default.WithoutAnswer
	if d.Held.Pairs == 0 || f == nil || f.Before != f.After {
		t.Errorf("held-out: %d pairs, %+v; want some pairs and after = before", d.Held.Pairs, f)
	}
}

// TestDecisionsUseEveryRollout: an item good on the correct rollouts of
// the old held-out half only (indexes 1, 3 of each side's order) was dead
// on the old fit half; over all 16 rollouts it is good on 4, more than a 5%
// judge's errors explain (2), and follows correctness: kept.
func TestDecisionsUseEveryRollout(t *testing.T) {
	t.Parallel()
	m := sideMatrix(t, schema.StyleSRaR, "CCCCCCCCFFFFFFFF", []string{"SUGGEST", "SUGGEST", "ANSWER"},
		"0101010100000000", "1111110011000000", "1111111100000000")
	d := Decide("r", m, DefaultOptions())
	if d.Unmeasured != "" || d.Items[0].Drop != "" {
		t.Errorf("item 1: %+v (record %q); want kept", d.Items[0], d.Unmeasured)
	}
}

// TestFoldRubricsNeverSeeTheirFold: the rubric that scores the rollouts of
// fold g is decided without them: changing every verdict of fold 0 leaves
// fold 0's rubric as it was.
func TestFoldRubricsNeverSeeTheirFold(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	sides := "CCCCCCCCFFFFFFFF"
	types := []string{"SUGGEST", "SUGGEST", "PITFALL", "BONUS", "SUGGEST", "ANSWER"}
	cols := make([]string, len(types))
	for k := range cols {
		var b strings.Builder
		for range sides {
			b.WriteByte("01"[rng.IntN(2)])
		}
		cols[k] = b.String()
	}
	m := sideMatrix(t, schema.StyleSRaR, sides, types, cols...)
	folds := discrim.Folds(m, DefaultOptions().Folds)
	before := foldVersions(m, folds, DefaultOptions(), len(m.Items), nil)
	flipped := make([]string, len(cols))
	for k, c := range cols {
		b := []byte(c)
		for r := range b {
			if folds[r] == 0 {
				b[r] = "10"[b[r]-'0']
			}
		}
		flipped[k] = string(b)
	}
	after := foldVersions(sideMatrix(t, schema.StyleSRaR, sides, types, flipped...), folds, DefaultOptions(), len(m.Items), nil)
	if !slices.Equal(before[0].Keep, after[0].Keep) || !slices.Equal(before[0].Weights, after[0].Weights) {
		t.Errorf("fold 0's rubric changed with fold 0's own verdicts: %+v -> %+v", before[0], after[0])
	}
	changed := false
	for g := 1; g < len(before); g++ {
		changed = changed || !slices.Equal(before[g].Keep, after[g].Keep) || !slices.Equal(before[g].Weights, after[g].Weights)
	}
	if !changed {
		t.Error("no other fold's rubric changed: the test shows nothing")
	}
}

// TestWeightsFromWithinLabelCorrelation: A and B each follow correctness,
// with their misses on different flawed rollouts; C is the answer. Within
// the labels A and B move against each other (correct: constant; flawed:
// nab 0 of na 1, nb 1: cov −1/4) and C is constant, so no item shares its
// weight: raw = edge: .75, .75, 1; mean 5/6: weights 0.9, 0.9, 1.2. (Over
// all rollouts A and B correlate 7/15 and each 0.775 with C, which would
// have shared their weights.)
func TestWeightsFromWithinLabelCorrelation(t *testing.T) {
	t.Parallel()
	m := sideMatrix(t, schema.StyleSRaR, "CCCCFFFF", []string{"SUGGEST", "SUGGEST", "ANSWER"},
		"11110001", "11110010", "11110000")
	got := Weights(m, nil, []int{0, 1, 2}, []float64{0.75, 0.75, 1}, schema.StyleSRaR)
	if !slices.Equal(got, []float64{0.9, 0.9, 1.2}) {
		t.Errorf("weights %v; want [0.9 0.9 1.2]", got)
	}
}

// TestApplyKeepsIncompleteVerdictsIncomplete: a rollout whose verdicts
// missed an item of the source (a failed or partial judgment) is not made
// a fully judged one of the refined rubric, even when the item it missed
// is dropped; a fully judged rollout stays fully judged.
func TestApplyKeepsIncompleteVerdictsIncomplete(t *testing.T) {
	t.Parallel()
	rec := &schema.Record{ID: "r", Style: schema.StyleSRaR,
		Rubric: []schema.Item{{ID: 1, Type: "SUGGEST", Text: "a", Weight: 1}, {ID: 2, Type: "SUGGEST", Text: "b", Weight: 1}, {ID: 3, Type: "ANSWER", Text: "c", Weight: 1}},
		Rollouts: []schema.Rollout{
			{Index: 0, Satisfaction: []schema.Satisfaction{{ID: 1, Satisfied: true}, {ID: 2}, {ID: 3, Satisfied: true}}},
			{Index: 1, Satisfaction: []schema.Satisfaction{{ID: 2, Satisfied: true}, {ID: 3}}}, // item 1 missed
			{Index: 2, Satisfaction: []schema.Satisfaction{{ID: 1}, {ID: 3}}},                  // item 2 missed
		}}
	d := &Decision{ID: "r", Items: []ItemDecision{{ID: 1, Drop: DropDead}, {ID: 2, NewID: 1, Weight: 0.5}, {ID: 3, NewID: 2, Weight: 1.5}}}
	out := Apply(rec, d)
	m := discrim.FromRecord(nil, out)
	if m.Rollouts() != 1 || m.Index[0] != 0 {
		t.Errorf("fully judged rollouts of the refined record: %v; want only rollout 0", m.Index)
	}
	if n := len(out.Rollouts[1].Satisfaction); n == len(out.Rubric) {
		t.Errorf("rollout 1 (item 1 missed, then dropped) has %d verdicts for %d items: made whole", n, len(out.Rubric))
	}
}

// TestWeightZeroSrarItemsCountAlike: an srar item stored with weight 0
// counts in refine's rubric-score figure as in validate's (discrim's
// ItemWeight: 1): the in-sample AUROC before is validate's AUROC.
func TestWeightZeroSrarItemsCountAlike(t *testing.T) {
	t.Parallel()
	m := &discrim.Matrix{}
	m.Reset(schema.StyleSRaR)
	for k, typ := range []string{"SUGGEST", "SUGGEST", "ANSWER"} {
		w := 0.0
		if k == 1 {
			w = 1
		}
		m.AddItem(int32(k+1), typ, fmt.Sprintf("item %d", k), w, 0)
	}
	rows := []string{"C110", "C101", "C111", "F010", "F100", "F000", "C011", "F110"}
	for r, row := range rows {
		m.AddRollout(int32(r), row[0] == 'C', func(k int) bool { return row[1+k] == '1' })
	}
	st := discrim.Measure(m, nil, discrim.Options{})
	d := Decide("w0", m, DefaultOptions())
	got := d.Held.Rubric.WithoutAnswer
	if got == nil || !near(got.FitBefore, st.AUROCNoAnswer) {
		t.Errorf("refine's rubric-score AUROC before (in-sample) %+v; validate's %v", got, st.AUROCNoAnswer)
	}
}

// noiseMatrix is a record of n rollouts, the correct ones drawn at rate
// 0.5 (at least one of each side), whose items other than the ANSWER are
// coin flips, and whose ANSWER item follows correctness.
func noiseMatrix(rng *rand.Rand, n int) *discrim.Matrix {
	m := &discrim.Matrix{}
	m.Reset(schema.StyleSRaR)
	types := []string{"SUGGEST", "SUGGEST", "PITFALL", "BONUS", "SUGGEST", "SUGGEST", "ANSWER"}
	for k, typ := range types {
		m.AddItem(int32(k+1), typ, fmt.Sprintf("noise %d", k), 1, 0)
	}
	for r := range n {
		correct := r == 0 || (r != 1 && rng.IntN(2) == 0)
		m.AddRollout(int32(r), correct, func(k int) bool {
			if k == len(types)-1 {
				return correct
			}
			return rng.IntN(2) == 0
		})
	}
	return m
}

// TestNoiseIsNotRaised: on corpora whose items other than the ANSWER are
// coin flips, the rubric's own signal (without ANSWER items) is said raised
// only when its interval excludes 0, which happens in at most one of 8
// seeds; the output says NOT raised then.
func TestNoiseIsNotRaised(t *testing.T) {
	t.Parallel()
	raised := 0
	for seed := range 8 {
		rng := rand.New(rand.NewPCG(uint64(seed), 41))
		s := &Summary{}
		for i := range 60 {
			d := Decide(fmt.Sprintf("%016x", seed*1000+i), noiseMatrix(rng, 16), DefaultOptions())
			s.Add(&d)
		}
		s.Finish()
		c := s.HeldOut.WithoutAnswer
		if c.Raised != (c.CI95[0] > 0) || c.Records != 60 {
			t.Fatalf("seed %d: %+v: raised must be the interval's lower bound above 0, over 60 records", seed, c)
		}
		if c.Raised {
			raised++
		}
		var b strings.Builder
		s.WriteText(&b, "src", "dst")
		if !c.Raised && !strings.Contains(b.String(), "NOT raised") {
			t.Errorf("seed %d: not raised, but the output does not say so:\n%s", seed, b.String())
		}
	}
	if raised > 1 {
		t.Errorf("raised in %d of 8 pure-noise corpora; want at most 1", raised)
	}
}

// TestRefineJSONShape: refine.json holds heldout.{without_answer,
// with_answer}: {before, after, change, ci95: [lo, hi], raised}, the
// in-sample figures beside them, and every scheme's.
func TestRefineJSONShape(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	s := &Summary{}
	for i := range 20 {
		d := Decide(fmt.Sprint(i), noiseMatrix(rng, 8), DefaultOptions())
		s.Add(&d)
	}
	s.Finish()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) any {
		var cur any = doc
		for _, p := range path {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[p]
		}
		return cur
	}
	for _, set := range []string{"heldout", "fit"} {
		for _, ans := range []string{"without_answer", "with_answer"} {
			for _, key := range []string{"before", "after", "change", "raised"} {
				if get(set, ans, key) == nil {
					t.Errorf("%s.%s.%s missing in %s", set, ans, key, raw)
				}
			}
			if ci, ok := get(set, ans, "ci95").([]any); !ok || len(ci) != 2 {
				t.Errorf("%s.%s.ci95 is %v; want [lo, hi]", set, ans, get(set, ans, "ci95"))
			}
		}
	}
	for _, scheme := range append(slices.Clone(schema.Schemes), discrim.RubricScore) {
		if get("by_scheme", scheme, "heldout", "without_answer", "ci95") == nil {
			t.Errorf("by_scheme.%s.heldout missing", scheme)
		}
	}
	if w, _ := get("by_scheme", "srar", "weights").(string); !strings.Contains(w, "do not reach") {
		t.Errorf("by_scheme.srar.weights = %q; want it to say the weights do not reach srar's reward", w)
	}
}

// TestMinGainGate: the gate on the interval's lower bound.
func TestMinGainGate(t *testing.T) {
	t.Parallel()
	s := &Summary{HeldOut: FigureSet{WithoutAnswer: Change{Records: 10, Before: 0.6, After: 0.7, Change: 0.1, CI95: [2]float64{0.02, 0.18}}}}
	if err := s.CheckGain(0.01); err != nil {
		t.Errorf("lower bound 0.02 against --min-gain 0.01: %v", err)
	}
	err := s.CheckGain(0.05)
	if err == nil || !strings.Contains(err.Error(), "0.02") || !strings.Contains(err.Error(), "--min-gain 0.05") {
		t.Errorf("lower bound 0.02 against --min-gain 0.05: %v; want an error naming both", err)
	}
	if err := (&Summary{}).CheckGain(0); err == nil {
		t.Error("no held-out figure passes the gate")
	}
}

// TestAntiNeedsTheCountsToShowIt: an edge below --min-edge drops an item
// only when the counts make a lower rate among the correct rollouts likely
// (discrim.ProbLower ≥ AntiPosterior): an aligned item that misses the one
// correct rollout of 16 (edge 0 − 4/15 = −0.27; P(lower) about 1/2) is
// kept, an item good on 2 of 8 correct and 6 of 8 flawed rollouts (edge
// −0.5) is dropped.
func TestAntiNeedsTheCountsToShowIt(t *testing.T) {
	t.Parallel()
	one := sideMatrix(t, schema.StyleSRaR, "C"+strings.Repeat("F", 15), []string{"SUGGEST", "SUGGEST", "ANSWER"},
		"0111100000000000", "1000000000000000", "1000000000000000")
	if d := Decide("one", one, DefaultOptions()); d.Items[0].Drop != "" {
		t.Errorf("an edge one correct rollout decides: %+v; want kept", d.Items[0])
	}
	bal := sideMatrix(t, schema.StyleSRaR, "CCCCCCCCFFFFFFFF", []string{"SUGGEST", "SUGGEST", "ANSWER"},
		"1100000011111100", "1111110011000000", "1111111100000000")
	if d := Decide("bal", bal, DefaultOptions()); d.Items[0].Drop != DropAnti {
		t.Errorf("2 of 8 correct against 6 of 8 flawed: %+v; want anti", d.Items[0])
	}
}
