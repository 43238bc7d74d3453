package synthcorpus

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// words make item texts distinct within a record (no two share a bigram
// by chance often enough to read as near duplicates).
var words = strings.Fields(`factor expand substitute verify bound divide multiply simplify isolate square
	root sum product term sign limit integer prime modulus remainder angle side ratio area volume
	equation inequality function domain range parity digit case induction`)

// rubric writes the items' texts, types and weights. A redundant item's
// text rewords the aligned item it copies.
func rubric(rng *rand.Rand, i int, style string, kinds []Kind) []schema.Item {
	items := make([]schema.Item, len(kinds))
	for k := range items {
		typ, weight := itemType(rng, style, k, len(kinds))
		text := fmt.Sprintf("Problem %d: %s the %s, then %s the %s (%d).", i,
			words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))], k+1)
		if typ == schema.TypeAnswer {
			text = fmt.Sprintf("The final answer is %d.", i)
		}
		if kinds[k] == Redundant {
			src := redundantSource(kinds, k)
			text = fmt.Sprintf("Equivalently: %s (%d)", items[src].Text, k+1)
		}
		valid := true
		items[k] = schema.Item{ID: int32(k + 1), Type: typ, Text: text, Weight: weight, Polarity: schema.PolarityOf(typ), Valid: &valid}
	}
	return items
}

// itemType: srar's first item is a SUGGEST and its last the ANSWER, the
// rest SUGGEST, PITFALL and BONUS in turn; factual_process's first item is
// FACTUAL, the rest alternate, with weights 1 to 5.
func itemType(rng *rand.Rand, style string, k, n int) (string, float64) {
	if style == schema.StyleFactualProcess {
		if k%2 == 0 {
			return schema.TypeFactual, float64(1 + rng.IntN(5))
		}
		return schema.TypeProcess, float64(1 + rng.IntN(5))
	}
	switch {
	case k == n-1:
		return schema.TypeAnswer, 1
	case k == 0:
		return schema.TypeSuggest, 1
	}
	return []string{schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus}[k%3], 1
}

// RedundantSource is the position of the aligned item a redundant item at
// position k copies: the last aligned item before it.
func RedundantSource(kinds []Kind, k int) int { return redundantSource(kinds, k) }

// redundantSource is the last aligned item before k (plantKinds makes sure
// there is one).
func redundantSource(kinds []Kind, k int) int {
	for j := k - 1; j >= 0; j-- {
		if kinds[j] == Aligned {
			return j
		}
	}
	return 0
}

// goodSide draws x (the good-side value) of an item of kind k on a rollout;
// aligned holds the aligned kind's rates on correct and flawed rollouts
// (zero: the defaults, Options.Aligned).
func goodSide(rng *rand.Rand, k Kind, answer, correct bool, aligned [2]float64) bool {
	misaligned := [2]float64{aligned[1], aligned[0]}
	if aligned == ([2]float64{}) {
		aligned, misaligned = [2]float64{0.85, 0.25}, [2]float64{0.2, 0.8}
	}
	switch {
	case answer:
		return correct
	case k == Aligned && correct:
		return rng.Float64() < aligned[0]
	case k == Aligned:
		return rng.Float64() < aligned[1]
	case k == Misaligned && correct:
		return rng.Float64() < misaligned[0]
	case k == Misaligned:
		return rng.Float64() < misaligned[1]
	case k == Saturated:
		return true
	case k == Dead:
		return false
	}
	return rng.Float64() < 0.5
}

// addVerdicts gives every rollout a verdict on every item, with judge noise
// on top (and paraphrase noise on redundant items), and stores the
// empirical figures the verdicts give (as the pipeline's empirical stage
// does).
func addVerdicts(rng *rand.Rand, rec *schema.Record, kinds []Kind, correct []bool, o Options) {
	noise := o.JudgeNoise
	n := len(rec.Rubric)
	x := make([]bool, n)
	flip := make([]bool, n)
	for j := range rec.Rollouts {
		ro := &rec.Rollouts[j]
		ro.Satisfaction = make([]schema.Satisfaction, n)
		for k, it := range rec.Rubric {
			if kinds[k] == Redundant {
				// graded as its source, the judge's error included (as the
				// simulated endpoint grades a paraphrase), then flipped
				// again on a draw of its own
				src := redundantSource(kinds, k)
				x[k], flip[k] = x[src], flip[src]
				if o.ParaphraseNoise > 0 && rng.Float64() < o.ParaphraseNoise {
					flip[k] = !flip[k]
				}
			} else {
				x[k] = goodSide(rng, kinds[k], it.Type == schema.TypeAnswer, correct[j], o.Aligned)
				flip[k] = rng.Float64() < noise
			}
			sat := (x[k] != (it.Polarity < 0)) != flip[k]
			ro.Satisfaction[k] = schema.Satisfaction{ID: it.ID, Satisfied: sat, Step: 0}
		}
	}
	storeEmpirical(rec)
}

func storeEmpirical(rec *schema.Record) {
	z := make([]float64, len(rec.Rollouts))
	for j, ro := range rec.Rollouts {
		if ro.Correct {
			z[j] = 1
		}
	}
	sat := make([]float64, len(rec.Rollouts))
	for k := range rec.Rubric {
		for j, ro := range rec.Rollouts {
			sat[j] = 0
			if ro.Satisfaction[k].Satisfied {
				sat[j] = 1
			}
		}
		it := &rec.Rubric[k]
		v := reward.ItemValidity(sat, z, it.Polarity, *rec.Provenance.Alpha)
		it.SatRate, it.Corr, it.EmpiricalValid = v.SatRate, v.Corr, v.Valid
	}
}
