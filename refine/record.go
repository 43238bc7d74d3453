package refine

import (
	"github.com/rubricforge/rubricforge/schema"
)

// Apply is rec refined by d: the kept items renumbered 1..n in their
// order with their new weights, and every rollout's verdicts on the kept
// items renamed to match. Everything else is rec's. rec is not modified.
//
// A rollout whose verdicts do not match rec's rubric (one per item, in
// order: a judgment that missed items, or one of another item list) was
// not judged on rec's rubric and is not made judged on the refined one: it
// keeps its renamed verdicts on the kept items while they still leave a
// kept item without one, and none when they would cover every kept item.
func Apply(rec *schema.Record, d *Decision) *schema.Record {
	out := *rec
	newID := make(map[int32]int32, len(d.Items))
	out.Rubric = make([]schema.Item, 0, len(d.Items))
	for i, it := range d.Items {
		if it.Drop != "" {
			continue
		}
		item := rec.Rubric[i]
		item.ID, item.Weight = it.NewID, it.Weight
		out.Rubric = append(out.Rubric, item)
		newID[it.ID] = it.NewID
	}
	out.Rollouts = make([]schema.Rollout, len(rec.Rollouts))
	for r, ro := range rec.Rollouts {
		ro.Satisfaction = make([]schema.Satisfaction, 0, len(out.Rubric))
		for _, v := range rec.Rollouts[r].Satisfaction {
			if id, ok := newID[v.ID]; ok {
				v.ID = id
				ro.Satisfaction = append(ro.Satisfaction, v)
			}
		}
		if !judgedOn(rec.Rollouts[r].Satisfaction, rec.Rubric) && judgedOn(ro.Satisfaction, out.Rubric) {
			ro.Satisfaction = []schema.Satisfaction{}
		}
		out.Rollouts[r] = ro
	}
	return &out
}

// judgedOn reports whether verdicts are one per item of rubric, in order.
func judgedOn(verdicts []schema.Satisfaction, rubric []schema.Item) bool {
	if len(verdicts) != len(rubric) || len(rubric) == 0 {
		return false
	}
	for k, v := range verdicts {
		if v.ID != rubric[k].ID {
			return false
		}
	}
	return true
}
