package discrim

import (
	"math/rand/v2"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkMeasure measures one record of 8 rollouts x 10 items (the
// validate benchmark's shape) and folds it, with its paid-reward scores for
// the intervals, into an aggregate: the per-record cost of validate's
// discrimination section.
func BenchmarkMeasure(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := &Matrix{}
	m.Reset(schema.StyleSRaR)
	types := []string{"SUGGEST", "SUGGEST", "PITFALL", "BONUS", "SUGGEST", "PITFALL", "BONUS", "SUGGEST", "SUGGEST", "ANSWER"}
	for k, t := range types {
		m.AddItem(int32(k+1), t, "Problem 12: factor the sum, then verify the remainder by substitution.", 1, 0)
	}
	for r := range 8 {
		m.AddRollout(int32(r), r%2 == 0, func(int) bool { return rng.IntN(2) == 0 })
	}
	g := NewAggregate()
	for b.Loop() {
		st := Measure(m, nil, Options{})
		g.Add("r", &st)
		g.AddScores("r", m, &st)
	}
}
