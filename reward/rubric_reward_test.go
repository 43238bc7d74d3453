package reward

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestRubricRewardIsWhatScorePays: over random rubrics of both math styles
// (weights 0 to 5, PITFALLs among them) and random verdicts, RubricReward
// is, under every scheme, the part of Score's result the rubric pays: srar
// the suggest, pitfall and bonus components (Δ_i, which ignores weights),
// rgr and grounded the reward, rlcer the cot component over the items
// marked valid, papo the process metric of a correct rollout.
func TestRubricRewardIsWhatScorePays(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	p := DefaultParams()
	types := [][]string{
		{schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer},
		{schema.TypeFactual, schema.TypeProcess},
	}
	for trial := range 400 {
		ts := types[trial%2]
		n := 1 + rng.IntN(8)
		items := make([]schema.Item, n)
		verdicts := make([]schema.Satisfaction, n)
		valid := make([]bool, n)
		for k := range items {
			typ := ts[rng.IntN(len(ts))]
			items[k] = schema.Item{ID: int32(k + 1), Type: typ, Text: "x", Weight: float64(rng.IntN(6)), Polarity: schema.PolarityOf(typ)}
			verdicts[k] = schema.Satisfaction{ID: int32(k + 1), Satisfied: rng.IntN(2) == 0}
			valid[k] = rng.IntN(3) > 0
		}
		lab := &schema.Label{ID: "p", Rubric: items}
		r := &Rollout{Correct: true, FormatOK: true, Verdicts: verdicts}
		for _, scheme := range schema.Schemes {
			if scheme == schema.SchemeGrounded && trial%4 == 3 {
				continue
			}
			res := Score(p, scheme, lab, r, valid)
			var want float64
			switch scheme {
			case schema.SchemeSRaR:
				want = res.Components["suggest"] + res.Components["pitfall"] + res.Components["bonus"]
			case schema.SchemeRGR, schema.SchemeGrounded:
				want = res.Reward
			case schema.SchemeRLCER:
				want = res.Components["cot"]
			case schema.SchemePAPO:
				want = res.Metrics["process"]
			}
			if got := RubricReward(p, scheme, items, verdicts, valid); math.Abs(got-want) > 1e-12 {
				t.Fatalf("trial %d, %s: RubricReward %v; Score pays %v (items %+v, verdicts %+v)", trial, scheme, got, want, items, verdicts)
			}
		}
	}
}
