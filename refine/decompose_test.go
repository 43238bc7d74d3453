package refine

import (
	"testing"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// verdictRecord is an srar record over 8 rollouts, 4 correct (indexes
// 0-3) then 4 flawed, whose items' verdicts are the strings given, one
// character per rollout.
func verdictRecord(items []schema.Item, verdicts []string) *schema.Record {
	rec := &schema.Record{ID: "r", Style: schema.StyleSRaR, Rubric: items}
	for r := range 8 {
		ro := schema.Rollout{Index: int32(r), Correct: r < 4}
		for i, v := range verdicts {
			ro.Satisfaction = append(ro.Satisfaction, schema.Satisfaction{ID: items[i].ID, Satisfied: v[r] == '1'})
		}
		rec.Rollouts = append(rec.Rollouts, ro)
	}
	return rec
}

func suggest(id int32, text string) schema.Item {
	return schema.Item{ID: id, Type: schema.TypeSuggest, Text: text, Weight: 1, Polarity: 1}
}

// TestDecideWithFinerHandRecord: on a hand-made record the finer items
// are decided by the refinement's rules plus theirs: kept only when valid
// with a positive edge; the held-out AUROC before is the source rubric's
// alone, measured on the rollouts the distiller was not shown (1, 3, 5, 7:
// the held-out half of discrim.Split; with 4 folds, pairs 1-5 and 3-7).
func TestDecideWithFinerHandRecord(t *testing.T) {
	t.Parallel()
	src := verdictRecord([]schema.Item{suggest(1, "aligned"), suggest(2, "saturated"), {ID: 3, Type: schema.TypeAnswer, Text: "answer", Weight: 1, Polarity: 1}},
		[]string{"11110000", "11111111", "11110000"})
	invalid := false
	fine := verdictRecord([]schema.Item{suggest(1, "A aligned"), suggest(2, "B saturated"), suggest(3, "C anti"), suggest(4, "D no edge"), suggest(5, "E invalid")},
		[]string{"11100000", "11111111", "00001111", "11001100", "11110000"})
	fine.Rubric[4].Valid = &invalid
	ext, ok := withFiner(src, fine)
	if !ok {
		t.Fatal("withFiner refused a record judged on every rollout")
	}
	if len(ext.Rubric) != 8 || ext.Rubric[3].ID != 4 || ext.Rubric[7].ID != 8 || len(ext.Rollouts[5].Satisfaction) != 8 || ext.Rollouts[5].Satisfaction[5].ID != 6 {
		t.Fatalf("extended record: %d items, ids %d..%d, %d verdicts", len(ext.Rubric), ext.Rubric[3].ID, ext.Rubric[7].ID, len(ext.Rollouts[5].Satisfaction))
	}
	if len(src.Rubric) != 3 || len(src.Rollouts[5].Satisfaction) != 3 {
		t.Fatal("withFiner changed the source record")
	}
	var m discrim.Matrix
	d := decideWithFiner(ext, 3, &m, DefaultOptions())
	want := []struct {
		drop  string
		finer bool
	}{{"", false}, {DropSaturated, false}, {"", false}, {"", true}, {DropSaturated, true}, {DropAnti, true}, {DropNoEdge, true}, {DropInvalid, true}}
	for i, w := range want {
		if it := d.Items[i]; it.Drop != w.drop || it.Finer != w.finer {
			t.Errorf("item %d (%s): drop %q finer %v, want %q %v (edge %g)", i+1, ext.Rubric[i].Text, it.Drop, it.Finer, w.drop, w.finer, it.Edge)
		}
	}
	if a := d.Items[3]; a.NewID != 3 || a.Text != "A aligned" || a.Edge != 0.75 {
		t.Errorf("the kept finer item: %+v, want new id 3, edge 0.75", a)
	}
	m2 := discrim.FromRecord(nil, src)
	plain := decide(src.ID, m2, 3, DefaultOptions(), nil, []int{1, 3, 5, 7})
	for _, f := range []struct{ with, plain *RecordFigure }{{d.Held.Default.WithoutAnswer, plain.Held.Default.WithoutAnswer}, {d.Held.Rubric.WithAnswer, plain.Held.Rubric.WithAnswer}} {
		if f.with == nil || f.plain == nil || f.with.Before != f.plain.Before {
			t.Errorf("held-out AUROC before: %+v with finer items, %+v without", f.with, f.plain)
		}
	}
	if d.Held.Pairs != 2 {
		t.Errorf("held-out pairs %d; want 2 (the unseen half's, within folds)", d.Held.Pairs)
	}
	out := Apply(ext, &d)
	if len(out.Rubric) != 3 || out.Rubric[2].Text != "A aligned" || len(out.Rollouts[0].Satisfaction) != 3 {
		t.Errorf("refined record: %+v", out.Rubric)
	}
	var sum Summary
	sum.Add(&d)
	if dc := sum.Decomposed; dc.Proposed != 5 || dc.Kept != 1 || dc.Dropped[DropNoEdge] != 1 || sum.Items.In != 3 {
		t.Errorf("summary: %+v, items %+v", dc, sum.Items)
	}
}

// TestWithFinerNeedsEveryVerdict: a rollout judged on the source items but
// not on the finer ones leaves the record without its finer items.
func TestWithFinerNeedsEveryVerdict(t *testing.T) {
	t.Parallel()
	src := verdictRecord([]schema.Item{suggest(1, "a"), suggest(2, "b")}, []string{"11110000", "11111111"})
	fine := verdictRecord([]schema.Item{suggest(1, "c"), suggest(2, "d")}, []string{"11110000", "11100000"})
	fine.Rollouts[6].Satisfaction = nil
	if got, ok := withFiner(src, fine); ok || got != src {
		t.Errorf("withFiner = %v, %v; want the source record and false", got != src, ok)
	}
}
