package refine

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// handItem is one item of a hand-made matrix: its type and its good-side
// values on the correct and the flawed fit rollouts.
type handItem struct {
	typ             string
	correct, flawed string // "1101": x per rollout
}

// handMatrix builds a matrix whose held-out half repeats its fit half:
// each fit rollout is followed (by index) by a copy, so discrim.Split puts
// one of each pair in each half.
func handMatrix(style string, items []handItem) *discrim.Matrix {
	m := &discrim.Matrix{}
	m.Reset(style)
	for i, it := range items {
		m.AddItem(int32(i+1), it.typ, fmt.Sprintf("w%da w%db", i, i), 1, schema.PolarityOf(it.typ)) // texts worded apart
	}
	idx := int32(0)
	add := func(correct bool, r int) {
		for range 2 {
			m.AddRollout(idx, correct, func(k int) bool {
				vs := items[k].flawed
				if correct {
					vs = items[k].correct
				}
				x := vs[r] == '1'
				return x != m.Items[k].Pitfall
			})
			idx++
		}
	}
	for r := range len(items[0].correct) {
		add(true, r)
	}
	for r := range len(items[0].flawed) {
		add(false, r)
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestDecideHandMatrix: every rule on a matrix computed by hand (see
// docs/refine.md, "A worked example").
func TestDecideHandMatrix(t *testing.T) {
	t.Parallel()
	m := handMatrix(schema.StyleSRaR, []handItem{
		{schema.TypeSuggest, "1110", "0010"}, // 1: aligned, edge 0.5
		{schema.TypeSuggest, "0000", "0000"}, // 2: dead
		{schema.TypeSuggest, "1111", "1111"}, // 3: saturated
		{schema.TypePitfall, "0000", "1111"}, // 4: satisfied by the correct ones only: edge -1, Fisher p 1/70
		{schema.TypeSuggest, "1110", "0010"}, // 5: item 1 again
		{schema.TypeAnswer, "1111", "0000"},  // 6: the answer, edge 1
	})
	d := Decide("r", m, DefaultOptions())
	if d.Unmeasured != "" {
		t.Fatalf("unmeasured: %s", d.Unmeasured)
	}
	want := []ItemDecision{
		{ID: 1, Type: schema.TypeSuggest, Edge: 0.5, NewID: 1, Weight: 0.667},
		{ID: 2, Type: schema.TypeSuggest, Edge: 0, Drop: DropDead},
		{ID: 3, Type: schema.TypeSuggest, Edge: 0, Drop: DropSaturated},
		{ID: 4, Type: schema.TypePitfall, Edge: -1, Drop: DropAnti},
		{ID: 5, Type: schema.TypeSuggest, Edge: 0.5, Drop: DropRedundant, RedundantWith: 1},
		{ID: 6, Type: schema.TypeAnswer, Edge: 1, NewID: 2, Weight: 1.333},
	}
	for i, w := range want {
		got := d.Items[i]
		if got.ID != w.ID || got.Drop != w.Drop || got.RedundantWith != w.RedundantWith || got.NewID != w.NewID ||
			!near(got.Edge, w.Edge) || !near(got.Weight, w.Weight) || got.Restored {
			t.Errorf("item %d: %+v, want %+v", i+1, got, w)
		}
	}
	// Every rollout is measured: items 1 and 5 vary within both labels and
	// agree (within-label phi 1, stratified p = (1/28)·(1/28) = 0.0013,
	// the one pair tested), so the later one goes. The held-out figures
	// are cross-fitted over within-fold pairs.
	if d.Held.Pairs == 0 || d.Held.Default.WithoutAnswer == nil || d.Held.Default.WithAnswer == nil {
		t.Errorf("held-out figures: %+v; want them over some pairs", d.Held)
	}
}

// TestWeightsHandExample is the worked example of docs/refine.md: items A
// and B say the same thing (within-label phi 1), C moves against A and B
// within the labels (correct: na 3, nb 3, nab 2: cov 2 − 9/4 = −1/4;
// flawed: nab 0: cov −1/4), which is no redundancy.
//
//	raw_A = raw_B = 0.5 / (1 + 1 + 0) = 1/4,  raw_C = 0.5 / (1 + 0 + 0) = 1/2
//	srar: w = raw / mean(raw) = 0.75, 0.75, 1.5
//	factual_process: w = max(1, round(5 raw / max raw)) = round(2.5) = 3, 3, 5
func TestWeightsHandExample(t *testing.T) {
	t.Parallel()
	items := []handItem{
		{schema.TypeSuggest, "1110", "1000"},
		{schema.TypeSuggest, "1110", "1000"},
		{schema.TypeSuggest, "1101", "0100"},
	}
	for _, tc := range []struct {
		style string
		want  []float64
	}{
		{schema.StyleSRaR, []float64{0.75, 0.75, 1.5}},
		{schema.StyleFactualProcess, []float64{3, 3, 5}},
	} {
		m := handMatrix(tc.style, items)
		got := Weights(m, nil, []int{0, 1, 2}, []float64{0.5, 0.5, 0.5}, tc.style)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: weights %v, want %v", tc.style, got, tc.want)
		}
	}
	// An item with an edge at or below 0 counts with the floor 0.05.
	m := handMatrix(schema.StyleSRaR, items[:1])
	if got := Weights(m, nil, []int{0}, []float64{-0.3}, schema.StyleSRaR); !slices.Equal(got, []float64{1}) {
		t.Errorf("one item: weights %v, want [1]", got)
	}
}

// TestDecideKeepsTheStylesRules: a dropped SUGGEST comes back when an srar
// rubric would have none, and dropped items, largest edge first, until a
// factual_process rubric has three.
func TestDecideKeepsTheStylesRules(t *testing.T) {
	t.Parallel()
	srar := handMatrix(schema.StyleSRaR, []handItem{
		{schema.TypeSuggest, "1111", "1111"}, // saturated
		{schema.TypeSuggest, "0000", "0000"}, // dead
		{schema.TypeAnswer, "1111", "0000"},
	})
	d := Decide("s", srar, DefaultOptions())
	if d.Items[0].Drop != "" || !d.Items[0].Restored || d.Items[1].Drop != DropDead {
		t.Errorf("srar: %+v, want the saturated SUGGEST restored (edge 0 = the dead one's; the first wins) and the dead one dropped", d.Items)
	}
	fp := handMatrix(schema.StyleFactualProcess, []handItem{
		{schema.TypeFactual, "1111", "0000"}, // edge 1
		{schema.TypeProcess, "1111", "1111"}, // saturated, edge 0
		{schema.TypeProcess, "0000", "0000"}, // dead, edge 0
		{schema.TypeProcess, "0011", "1111"}, // anti, edge -0.5
	})
	d = Decide("f", fp, DefaultOptions())
	var drops []string
	for _, it := range d.Items {
		drops = append(drops, it.Drop)
	}
	if !slices.Equal(drops, []string{"", "", "", DropAnti}) || !d.Items[1].Restored || !d.Items[2].Restored {
		t.Errorf("factual_process drops %q (%+v), want the saturated and the dead restored, the anti one dropped", drops, d.Items)
	}
}

// TestDecideUnmeasured: a record without a side, or with fewer than
// MinSide judged rollouts on one, is left alone.
func TestDecideUnmeasured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		items []handItem
		want  string
	}{
		{"only correct", []handItem{{schema.TypeSuggest, "101", ""}}, "only_correct"},
		{"only flawed", []handItem{{schema.TypeSuggest, "", "101"}}, "only_flawed"},
		{"two correct under --min-side 3", []handItem{{schema.TypeSuggest, "1", "0101"}}, UnmeasuredFewRollouts},
	} {
		m := handMatrix(schema.StyleSRaR, tc.items)
		opt := DefaultOptions()
		opt.MinSide = 3
		if d := Decide("x", m, opt); d.Unmeasured != tc.want || d.Items != nil {
			t.Errorf("%s: %+v, want unmeasured %s", tc.name, d, tc.want)
		}
	}
}

// TestRedundantOnlyWhenTheyMoveTogether: two items that agree only
// because both follow correctness exactly are both kept; two that also
// agree within a side are a redundant pair, and the one with the smaller
// edge goes. The exact floor (no judge error: within-label phi 0.9).
func TestRedundantOnlyWhenTheyMoveTogether(t *testing.T) {
	t.Parallel()
	follow := handMatrix(schema.StyleSRaR, []handItem{
		{schema.TypeSuggest, "1111", "0000"},
		{schema.TypeSuggest, "1111", "0000"},
		{schema.TypeAnswer, "1111", "0000"},
	})
	for _, it := range Decide("a", follow, DefaultOptions()).Items {
		if it.Drop != "" {
			t.Errorf("items that only follow correctness: %+v dropped", it)
		}
	}
	together := handMatrix(schema.StyleSRaR, []handItem{
		{schema.TypeSuggest, "1100", "0000"}, // edge 0.5
		{schema.TypeSuggest, "1110", "0010"}, // edge 0.5; with item 3, equal
		{schema.TypeSuggest, "1110", "0000"}, // edge 0.75, corr with item 2 0.77 over all 8
		{schema.TypeAnswer, "1111", "0000"},
	})
	exact := DefaultOptions()
	exact.JudgeError = -1
	d := Decide("b", together, exact)
	// Over the 16 rollouts (each row twice), within the labels: items 2
	// and 3 agree on the correct side (cov 6 − 4.5 = 1.5, spreads 1.5) and
	// item 3 is constant on the flawed (item 2's spread 1.5): 1.5/√(3·1.5) =
	// 0.71; items 1 and 3: 1/√(2·1.5) = 0.58; items 1 and 2: 0.41. So
	// nothing is redundant.
	for _, it := range d.Items {
		if it.Drop != "" {
			t.Errorf("no pair correlates 0.9: %+v dropped", it)
		}
	}
	pair := handMatrix(schema.StyleSRaR, []handItem{
		{schema.TypeSuggest, "1010", "1000"}, // edge 0.25
		{schema.TypeSuggest, "1010", "1000"}, // the same
		{schema.TypeSuggest, "1110", "1000"}, // edge 0.5
		{schema.TypeAnswer, "1111", "0000"},
	})
	d = Decide("c", pair, exact)
	if d.Items[1].Drop != DropRedundant || d.Items[1].RedundantWith != 1 || d.Items[0].Drop != "" {
		t.Errorf("equal items varying within the correct side: %+v, want item 2 dropped as redundant with 1", d.Items)
	}
}

// TestApplyRenumbers: kept items get ids 1..n with their new weights, and
// each rollout keeps its verdicts on them under the new ids.
func TestApplyRenumbers(t *testing.T) {
	t.Parallel()
	rec := &schema.Record{ID: "r", Style: schema.StyleSRaR,
		Rubric: []schema.Item{{ID: 1, Type: "SUGGEST", Text: "a", Weight: 1}, {ID: 2, Type: "SUGGEST", Text: "b", Weight: 1}, {ID: 3, Type: "ANSWER", Text: "c", Weight: 1}},
		Rollouts: []schema.Rollout{
			{Index: 0, Satisfaction: []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 2}, {ID: 2}, {ID: 3, Satisfied: true, Step: 4}}},
			{Index: 1, Satisfaction: []schema.Satisfaction{}},
		}}
	d := &Decision{ID: "r", Items: []ItemDecision{{ID: 1, Drop: DropDead}, {ID: 2, NewID: 1, Weight: 0.5}, {ID: 3, NewID: 2, Weight: 1.5}}}
	out := Apply(rec, d)
	wantRubric := []schema.Item{{ID: 1, Type: "SUGGEST", Text: "b", Weight: 0.5}, {ID: 2, Type: "ANSWER", Text: "c", Weight: 1.5}}
	if !slices.EqualFunc(out.Rubric, wantRubric, func(a, b schema.Item) bool {
		return a.ID == b.ID && a.Text == b.Text && a.Weight == b.Weight
	}) {
		t.Errorf("rubric %+v, want %+v", out.Rubric, wantRubric)
	}
	wantSat := []schema.Satisfaction{{ID: 1}, {ID: 2, Satisfied: true, Step: 4}}
	if !slices.Equal(out.Rollouts[0].Satisfaction, wantSat) || len(out.Rollouts[1].Satisfaction) != 0 {
		t.Errorf("verdicts %+v, want %+v and none", out.Rollouts[0].Satisfaction, wantSat)
	}
	if len(rec.Rubric) != 3 || rec.Rubric[0].Text != "a" || len(rec.Rollouts[0].Satisfaction) != 3 {
		t.Error("Apply changed its input")
	}
}
