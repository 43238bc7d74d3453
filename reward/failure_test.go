package reward

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// everyJudgment is every verdict set a judge could return on items: each
// item satisfied or not, at step 1.
func everyJudgment(items []schema.Item) [][]schema.Satisfaction {
	var out [][]schema.Satisfaction
	for mask := range 1 << len(items) {
		v := make([]schema.Satisfaction, len(items))
		for j, it := range items {
			v[j] = rewardtest.Sat(it.ID, mask&(1<<j) != 0, 1)
		}
		out = append(out, v)
	}
	return out
}

// TestFailedJudgmentPaysTheFloor checks, for every scheme, rubric and kind
// of response, that a failed judgment gets exactly the lowest reward any
// judgment of that response could give it: a policy that provokes judge
// failures (responses too long for the judge, text that breaks its JSON)
// must never earn more than a judged response.
func TestFailedJudgmentPaysTheFloor(t *testing.T) {
	p := DefaultParams()
	rubrics := map[string][]schema.Item{
		"srar":            rewardtest.SRaRItems(),
		"srar no pitfall": {rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypeBonus, 1), rewardtest.Item(3, schema.TypeAnswer, 1)},
		"factual_process": {rewardtest.Item(1, schema.TypeFactual, 3), rewardtest.Item(2, schema.TypeFactual, 2), rewardtest.Item(3, schema.TypeProcess, 1), rewardtest.Item(4, schema.TypePitfall, 2)},
		"only factual":    {rewardtest.Item(1, schema.TypeFactual, 1), rewardtest.Item(2, schema.TypeFactual, 1)},
		"zero weights":    {rewardtest.Item(1, schema.TypeFactual, 0), rewardtest.Item(2, schema.TypeProcess, 0)},
	}
	responses := map[string]string{
		"correct, formatted": rewardtest.TwoSteps,
		"wrong":              "### Step 1: Guess.\n2+3 = 6.\n<answer>6</answer>",
		"no format":          "It is 5, obviously.",
	}
	for rname, items := range rubrics {
		lab := rewardtest.Label(items)
		for tname, text := range responses {
			for _, scheme := range schema.Schemes {
				failed := judged(text, nil)
				got := Score(p, scheme, lab, &failed, nil)
				lowest, lowestScore := 0.0, 0.0
				for i, v := range everyJudgment(items) {
					r := judged(text, v)
					res := Score(p, scheme, lab, &r, nil)
					if i == 0 || res.Reward < lowest {
						lowest, lowestScore = res.Reward, res.Score
					}
				}
				if got.JudgeOK || !rewardtest.Near(got.Reward, lowest) || !rewardtest.Near(got.Score, lowestScore) {
					t.Errorf("%s, %s, %s: judge failed pays reward %v score %v (judge_ok %v); the lowest judged is %v %v",
						rname, tname, scheme, got.Reward, got.Score, got.JudgeOK, lowest, lowestScore)
				}
				sum := 0.0
				for _, c := range got.Components {
					sum += c
				}
				if scheme != schema.SchemeRGR && !rewardtest.Near(sum, got.Reward) {
					t.Errorf("%s, %s, %s: components %v do not add up to %v", rname, tname, scheme, got.Components, got.Reward)
				}
			}
		}
	}
}

// TestOutcomePolicyKeepsTheAccuracyFallback checks --on-judge-failure
// outcome: the accuracy-only reward of the earlier releases.
func TestOutcomePolicyKeepsTheAccuracyFallback(t *testing.T) {
	p := DefaultParams()
	lab := rewardtest.Label(rewardtest.SRaRItems())
	failed := judged(rewardtest.TwoSteps, nil)
	for scheme, want := range map[string]float64{schema.SchemeSRaR: 1, schema.SchemeRGR: 1, schema.SchemeGrounded: 0, schema.SchemeRLCER: 1, schema.SchemePAPO: 1} {
		if got := ScoreWith(p, OnJudgeFailureOutcome, scheme, lab, &failed, nil); !rewardtest.Near(got.Reward, want) {
			t.Errorf("%s: outcome policy pays %v, want %v", scheme, got.Reward, want)
		}
	}
}
