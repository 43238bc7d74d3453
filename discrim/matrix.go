package discrim

import (
	"math"

	"github.com/rubricforge/rubricforge/schema"
)

// Item is what discrimination needs of a rubric item.
type Item struct {
	ID   int32
	Type string
	Text string
	// Weight is w_i as the rubric score uses it (see [ItemWeight]);
	// Stored is the weight as the record stores it, which the rewards read.
	Weight, Stored float64
	// Pitfall is true when satisfying the item is bad (polarity −1), so its
	// good-side value is 1 − s.
	Pitfall bool
}

// Matrix is one record's verdicts: its items, and for each rollout that
// the satisfaction judge judged, its correctness and good-side values.
// Rollouts are kept in the order they are added; [Measure] and [Split]
// name them by that position.
type Matrix struct {
	Style string
	Items []Item
	// Index is each kept rollout's index in the record; Correct its
	// verification.
	Index   []int32
	Correct []bool
	// x holds the good-side values, rollout by rollout: x[r*len(Items)+i].
	x []bool
	// Skipped counts the record's rollouts without verdicts that match its
	// rubric (not judged, or judged against another item list).
	Skipped int
	// sims caches the items' text similarities (textSims), nil until
	// first needed.
	sims []float64
}

// Reset empties m for a record of the given style, keeping its storage.
func (m *Matrix) Reset(style string) {
	m.Style = style
	m.Items = m.Items[:0]
	m.Index = m.Index[:0]
	m.Correct = m.Correct[:0]
	m.x = m.x[:0]
	m.Skipped = 0
	m.sims = nil
}

// AddItem appends an item with its stored weight and polarity (0 takes the
// type's); add every item before the first rollout.
func (m *Matrix) AddItem(id int32, typ, text string, weight float64, polarity int32) {
	if polarity == 0 {
		polarity = schema.PolarityOf(typ)
	}
	m.Items = append(m.Items, Item{ID: id, Type: typ, Text: text, Weight: ItemWeight(m.Style, weight), Stored: weight, Pitfall: polarity < 0})
}

// AddRollout appends a judged rollout: satisfied(k) is the satisfaction
// verdict on the k-th item. The good side is taken here.
func (m *Matrix) AddRollout(index int32, correct bool, satisfied func(k int) bool) {
	m.Index = append(m.Index, index)
	m.Correct = append(m.Correct, correct)
	for k := range m.Items {
		m.x = append(m.x, satisfied(k) != m.Items[k].Pitfall)
	}
}

// Rollouts is how many judged rollouts m holds.
func (m *Matrix) Rollouts() int { return len(m.Correct) }

// X is the good-side value x of item i on the rollout at position r.
func (m *Matrix) X(r, i int) bool { return m.x[r*len(m.Items)+i] }

// ItemWeight is w_i: the stored weight's magnitude, as the reward's
// weighted fraction takes it (an srar item's is 1 unless `distill refine`
// re-weighted it; an srar item stored without one counts 1); a weight that
// is not a finite number counts 0.
func ItemWeight(style string, weight float64) float64 {
	if math.IsNaN(weight) || math.IsInf(weight, 0) {
		return 0
	}
	if style == schema.StyleSRaR && weight == 0 {
		return 1
	}
	return math.Abs(weight)
}

// AddJudged adds a rollout with its n verdicts (the k-th on item id(k),
// satisfied(k)) when they are one per item in item order, and otherwise
// counts it in Skipped. It reports whether the rollout was added.
func (m *Matrix) AddJudged(index int32, correct bool, n int, id func(k int) int32, satisfied func(k int) bool) bool {
	if !m.verdictsMatch(n, id) {
		m.Skipped++
		return false
	}
	m.AddRollout(index, correct, satisfied)
	return true
}

func (m *Matrix) verdictsMatch(n int, id func(k int) int32) bool {
	if len(m.Items) == 0 || n != len(m.Items) {
		return false
	}
	for k := range n {
		if id(k) != m.Items[k].ID {
			return false
		}
	}
	return true
}

// FromRecord is the matrix of a math-style record (AddJudged with each of
// its rollouts). m is reused when not nil.
func FromRecord(m *Matrix, rec *schema.Record) *Matrix {
	if m == nil {
		m = &Matrix{}
	}
	m.Reset(rec.Style)
	for i := range rec.Rubric {
		it := &rec.Rubric[i]
		m.AddItem(it.ID, it.Type, it.Text, it.Weight, it.Polarity)
	}
	for i := range rec.Rollouts {
		ro := &rec.Rollouts[i]
		m.AddJudged(ro.Index, ro.Correct, len(ro.Satisfaction),
			func(k int) int32 { return ro.Satisfaction[k].ID }, func(k int) bool { return ro.Satisfaction[k].Satisfied })
	}
	return m
}
