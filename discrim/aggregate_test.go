package discrim

import (
	"reflect"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// records for the aggregate, with their figures by hand (the exact
// definitions: no judge error):
//
//	"a": TestSRaRRecordByHand's: measured, 3 items (SUGGEST .5, PITFALL .5,
//	     ANSWER 1), AUROC 1, without ANSWER 0.875.
//	"b": one SUGGEST, 4 correct x = 0, 4 flawed x = 1: edge −1, anti, dead?
//	     no (x = 1 on 4 of 8), AUROC 0 (with and without ANSWER).
//	"c": all correct: only_correct.  "d": no rollouts: no_verdicts.
func aggregateRecords(t *testing.T) map[string]RecordStats {
	t.Helper()
	return map[string]RecordStats{
		"a": Measure(build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}, {typ: "PITFALL"}, {typ: "ANSWER"}},
			"C 101", "C 111", "F 010", "F 110"), nil, Options{JudgeError: -1}),
		"b": Measure(build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}},
			"C 0", "C 0", "C 0", "C 0", "F 1", "F 1", "F 1", "F 1"), nil, Options{JudgeError: -1}),
		"c": Measure(build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}}, "C 1"), nil, Options{JudgeError: -1}),
		"d": Measure(build(t, schema.StyleSRaR, []spec{{typ: "SUGGEST"}}), nil, Options{JudgeError: -1}),
	}
}

func TestAggregateByHand(t *testing.T) {
	recs := aggregateRecords(t)
	g := NewAggregate()
	for _, id := range []string{"a", "b", "c", "d"} {
		st := recs[id]
		g.Add(id, &st)
	}
	if g.Records != 4 || g.Measured != 2 || g.Unmeasured[OnlyCorrect] != 1 || g.Unmeasured[NoVerdicts] != 1 || g.UnmeasuredTotal() != 2 {
		t.Errorf("records %d measured %d unmeasured %v", g.Records, g.Measured, g.Unmeasured)
	}
	// Items of measured records: SUGGEST 2 (a's, b's: b's anti and negative),
	// PITFALL 1, ANSWER 1.
	if got := *g.ByType["SUGGEST"]; got != (Counts{Items: 2, NegativeEdge: 1, Anti: 1}) {
		t.Errorf("SUGGEST counts %+v", got)
	}
	if g.ByType["PITFALL"].Items != 1 || g.ByType["ANSWER"].Items != 1 {
		t.Errorf("by type %v", g.ByType)
	}
	if g.RecordsWith != (Counts{Items: 2, NegativeEdge: 1, Anti: 1}) {
		t.Errorf("records with %+v", g.RecordsWith)
	}
	if share, ok := g.AntiShare(); !ok || !near(share, 0.25) {
		t.Errorf("anti share %v; want 1 of 4 items", share)
	}
	// mean AUROC (1 + 0)/2 = 0.5; without ANSWER (0.875 + 0)/2 = 0.4375.
	if m, ok := g.MeanAUROC(true); !ok || !near(m, 0.5) {
		t.Errorf("mean AUROC %v", m)
	}
	if m, ok := g.MeanAUROC(false); !ok || !near(m, 0.4375) {
		t.Errorf("mean AUROC without ANSWER %v", m)
	}
	// Edge bins of width 0.1 from −1: 0.5 -> 15 (twice), 1 -> 19, −1 -> 0.
	// AUROC bins of width 0.05: 1 -> 19, 0 -> 0; 0.875 -> 17.
	var edges, aurocs, noAns [HistBins]int64
	edges[15], edges[19], edges[0] = 2, 1, 1
	aurocs[19], aurocs[0] = 1, 1
	noAns[17], noAns[0] = 1, 1
	if g.Edges.Counts != edges || g.AUROC.Counts != aurocs || g.AUROCNoAnswer.Counts != noAns {
		t.Errorf("histograms: edges %v auroc %v without ANSWER %v", g.Edges.Counts, g.AUROC.Counts, g.AUROCNoAnswer.Counts)
	}
	if want := []Low{{ID: "b", AUROC: 0, Correct: 4, Flawed: 4}, {ID: "a", AUROC: 1, Correct: 2, Flawed: 2}}; !reflect.DeepEqual(g.Lowest, want) {
		t.Errorf("lowest %+v", g.Lowest)
	}
	if got := g.Types(); !reflect.DeepEqual(got, []string{"SUGGEST", "PITFALL", "ANSWER"}) {
		t.Errorf("types %v", got)
	}
}

// TestAggregateMerge: two halves merged equal one aggregate of all.
func TestAggregateMerge(t *testing.T) {
	recs := aggregateRecords(t)
	whole, left, right := NewAggregate(), NewAggregate(), NewAggregate()
	for _, id := range []string{"a", "b", "c", "d"} {
		st := recs[id]
		whole.Add(id, &st)
		if id < "c" {
			left.Add(id, &st)
		} else {
			right.Add(id, &st)
		}
	}
	left.Merge(right)
	if !reflect.DeepEqual(left, whole) {
		t.Errorf("merged %+v\nwhole  %+v", left, whole)
	}
}

// TestLowestBounded: the kept list stays LowestKept long, lowest first,
// whatever the order records come in.
func TestLowestBounded(t *testing.T) {
	g := NewAggregate()
	for k := range 3 * LowestKept {
		id := string(rune('a' + (k*7)%(3*LowestKept)))
		g.keepLow(Low{ID: id, AUROC: float64((k*7)%(3*LowestKept)) / 100})
	}
	if len(g.Lowest) != LowestKept {
		t.Fatalf("kept %d", len(g.Lowest))
	}
	for k, l := range g.Lowest {
		if !near(l.AUROC, float64(k)/100) {
			t.Errorf("lowest[%d] = %+v; want AUROC %v", k, l, float64(k)/100)
		}
	}
}

func TestHistogramEdges(t *testing.T) {
	h := Histogram{Lo: -1, Hi: 1}
	for _, x := range []float64{-1, -0.9, -0.1 + 1e-15, 0, 0.95, 1, 2} {
		h.Add(x)
	}
	// −1 -> 0; −0.9 -> 1 (not 0, a float's error); ~−0.1 -> 9; 0 -> 10;
	// 0.95 -> 19; 1 and 2 -> 19.
	var want [HistBins]int64
	want[0], want[1], want[9], want[10], want[19] = 1, 1, 1, 1, 3
	if h.Counts != want {
		t.Errorf("counts %v; want %v", h.Counts, want)
	}
}
