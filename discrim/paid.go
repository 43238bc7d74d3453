package discrim

import (
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// RubricScore names the figure of the rubric score, Σ w_i x_i / Σ w_i
// with w_i = ItemWeight (validate's rubric AUROC), beside the schemes'.
const RubricScore = "rubric"

// DefaultScheme names the figure of each record's own scheme
// (schema.DefaultScheme of its style: srar for srar, rgr for
// factual_process).
const DefaultScheme = "default"

// Figure is one measured reward: a scheme's paid rubric reward
// (reward.RubricReward), DefaultScheme, or RubricScore; with or without the
// ANSWER items in the rubric.
type Figure struct {
	Scheme     string
	WithAnswer bool
}

// Figures are the figures measured, the record's own scheme first, then
// every scheme of schema.Schemes, then the rubric score; each without
// ANSWER items, then with.
func Figures() []Figure {
	names := append([]string{DefaultScheme}, schema.Schemes...)
	names = append(names, RubricScore)
	out := make([]Figure, 0, 2*len(names))
	for _, n := range names {
		out = append(out, Figure{Scheme: n}, Figure{Scheme: n, WithAnswer: true})
	}
	return out
}

// Version is one rubric over a matrix's items: the positions of the items
// it holds and their weights as the rubric stores them (a source record's
// stored weights, or a refinement's new ones).
type Version struct {
	Keep    []int
	Weights []float64
}

// SourceVersion is m's own rubric: every item with its stored weight.
func SourceVersion(m *Matrix) Version {
	v := Version{Keep: make([]int, len(m.Items)), Weights: make([]float64, len(m.Items))}
	for i, it := range m.Items {
		v.Keep[i], v.Weights[i] = i, it.Stored
	}
	return v
}

// Scorer scores rollouts of a matrix under a figure with reward's
// formulas, reusing its buffers; its zero value is ready.
type Scorer struct {
	Params   reward.Params
	items    []schema.Item
	pos      []int // matrix position of each of items
	verdicts []schema.Satisfaction
	valid    []bool
	sat, z   []float64
}

// Scores writes into dst (grown as needed) the score under figure f of
// each rollout at the positions pos, with the rubric v of m: the paid
// rubric reward of f's scheme (for DefaultScheme, the style's), or the
// rubric score. rlcer counts the items valid over the rollouts at group
// (the group the reward would be paid in; nil: all of m's), as
// reward.ScoreGroup does. ok is false when the figure has no item to score
// by (without ANSWER items, a rubric of ANSWER items only).
func (s *Scorer) Scores(dst []float64, m *Matrix, v Version, f Figure, pos, group []int) (out []float64, ok bool) {
	scheme := f.Scheme
	if scheme == DefaultScheme {
		scheme = schema.DefaultScheme(m.Style)
	}
	if s.Params == (reward.Params{}) {
		s.Params = reward.DefaultParams()
	}
	s.items, s.pos = s.items[:0], s.pos[:0]
	for k, i := range v.Keep {
		it := m.Items[i]
		if !f.WithAnswer && it.Type == schema.TypeAnswer {
			continue
		}
		w := v.Weights[k]
		if scheme == RubricScore {
			w = ItemWeight(m.Style, w)
		}
		pol := int32(1)
		if it.Pitfall {
			pol = -1
		}
		s.items = append(s.items, schema.Item{ID: it.ID, Type: it.Type, Weight: w, Polarity: pol})
		s.pos = append(s.pos, i)
	}
	dst = dst[:0]
	if len(s.items) == 0 {
		return dst, false
	}
	if scheme == schema.SchemeRLCER {
		s.groupValidity(m, group)
	}
	s.verdicts = s.verdicts[:0]
	for range s.items {
		s.verdicts = append(s.verdicts, schema.Satisfaction{})
	}
	for _, r := range pos {
		for k, i := range s.pos {
			s.verdicts[k].ID = s.items[k].ID
			s.verdicts[k].Satisfied = m.X(r, i) != m.Items[i].Pitfall
		}
		if scheme == RubricScore {
			dst = append(dst, reward.WeightedFraction(s.items, s.verdicts))
			continue
		}
		dst = append(dst, reward.RubricReward(s.Params, scheme, s.items, s.verdicts, s.valid))
	}
	return dst, true
}

// Same is the figure whose scores under v equal f's, for f's scores to be
// computed once: the record's own scheme is its style's; srar pays no
// ANSWER item; papo's process reward is grounded's weighted score, which
// rgr's equals without FACTUAL items and the rubric score equals unless an
// srar item is stored without a weight.
func Same(m *Matrix, v Version, f Figure) Figure {
	if f.Scheme == DefaultScheme {
		f.Scheme = schema.DefaultScheme(m.Style)
	}
	factual, zero := false, false
	for k, i := range v.Keep {
		factual = factual || m.Items[i].Type == schema.TypeFactual
		zero = zero || v.Weights[k] == 0
	}
	switch {
	case f.Scheme == schema.SchemeSRaR:
		f.WithAnswer = false
	case f.Scheme == schema.SchemePAPO,
		f.Scheme == schema.SchemeRGR && !factual,
		f.Scheme == RubricScore && !(zero && m.Style == schema.StyleSRaR):
		f.Scheme = schema.SchemeGrounded
	}
	return f
}

// groupValidity marks the items RLCER counts: valid by reward.ItemValidity
// over the group's rollouts.
func (s *Scorer) groupValidity(m *Matrix, group []int) {
	if group == nil {
		group = allPositions(m.Rollouts())
	}
	s.z = s.z[:0]
	for _, r := range group {
		s.z = append(s.z, b2f(m.Correct[r]))
	}
	s.valid = s.valid[:0]
	for k, i := range s.pos {
		s.sat = s.sat[:0]
		for _, r := range group {
			s.sat = append(s.sat, b2f(m.X(r, i) != m.Items[i].Pitfall))
		}
		v := reward.ItemValidity(s.sat, s.z, s.items[k].Polarity, s.Params.Alpha)
		s.valid = append(s.valid, v.Valid != nil && *v.Valid)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
