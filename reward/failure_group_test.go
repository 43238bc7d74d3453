package reward

import (
	"fmt"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// Responses of the group tests: correct in two steps, wrong in two steps,
// correct in one step.
const (
	wrongTwoSteps  = "### Step 1: Guess.\n2+3 = 6.\n### Step 2: Check.\n6-3 = 3.\n<answer>6</answer>"
	correctOneStep = "### Step 1: Add.\n2+3 = 5.\n<answer>5</answer>"
)

// everyStepJudgment is every verdict set a judge could return on items for
// a response of nSteps steps: each item satisfied or not, in no step (-1)
// or in one of the steps.
func everyStepJudgment(items []schema.Item, nSteps int) [][]schema.Satisfaction {
	steps := []int32{-1}
	for k := 1; k <= nSteps; k++ {
		steps = append(steps, int32(k))
	}
	choices := 2 * len(steps)
	total := 1
	for range items {
		total *= choices
	}
	out := make([][]schema.Satisfaction, 0, total)
	for n := range total {
		v := make([]schema.Satisfaction, len(items))
		for j, it := range items {
			c := n % choices
			n /= choices
			v[j] = rewardtest.Sat(it.ID, c%2 == 1, steps[c/2])
		}
		out = append(out, v)
	}
	return out
}

// advantageCeiling is, component by component, the lowest advantage (and
// step delta and reward) a rollout got over many judgments of it.
type advantageCeiling struct {
	reward, outcome, process, total float64
	offset, stepAdvantage, delta    []float64 // by step span
}

func newCeiling(r Result, a Advantage) advantageCeiling {
	c := advantageCeiling{reward: r.Reward, outcome: a.Outcome, process: a.Process, total: a.Total}
	for k := range a.Steps {
		c.offset = append(c.offset, a.Steps[k].Offset)
		c.stepAdvantage = append(c.stepAdvantage, a.Steps[k].Advantage)
	}
	for _, s := range r.Steps {
		c.delta = append(c.delta, s.Delta)
	}
	return c
}

func (c *advantageCeiling) lower(r Result, a Advantage) {
	c.reward, c.outcome, c.process, c.total = min(c.reward, r.Reward), min(c.outcome, a.Outcome), min(c.process, a.Process), min(c.total, a.Total)
	for k := range a.Steps {
		c.offset[k] = min(c.offset[k], a.Steps[k].Offset)
		c.stepAdvantage[k] = min(c.stepAdvantage[k], a.Steps[k].Advantage)
	}
	for k, s := range r.Steps {
		c.delta[k] = min(c.delta[k], s.Delta)
	}
}

// above names every component of a failed rollout's result and advantage
// that is above the ceiling.
func (c *advantageCeiling) above(r Result, a Advantage) []string {
	var out []string
	check := func(name string, got, ceiling float64) {
		if got > ceiling && !rewardtest.Near(got, ceiling) {
			out = append(out, fmt.Sprintf("%s %.4g > %.4g", name, got, ceiling))
		}
	}
	check("reward", r.Reward, c.reward)
	check("outcome", a.Outcome, c.outcome)
	check("process", a.Process, c.process)
	check("total", a.Total, c.total)
	if len(a.Steps) != len(c.offset) || len(r.Steps) != len(c.delta) {
		return append(out, fmt.Sprintf("%d step advantages and %d step results, judged %d and %d", len(a.Steps), len(r.Steps), len(c.offset), len(c.delta)))
	}
	for k := range a.Steps {
		check(fmt.Sprintf("step %d offset", a.Steps[k].Step), a.Steps[k].Offset, c.offset[k])
		check(fmt.Sprintf("step %d advantage", a.Steps[k].Step), a.Steps[k].Advantage, c.stepAdvantage[k])
	}
	for k, s := range r.Steps {
		check(fmt.Sprintf("step %d delta", s.Step), s.Delta, c.delta[k])
	}
	return out
}

// TestFailedJudgmentGetsNoMoreAdvantage checks, for every scheme with group
// advantages, rubric and group, that a rollout whose judgment failed gets,
// on every term (outcome, process, total) and every step (offset,
// advantage, delta), no more than the lowest any judgment of it could have
// given it in that group, the others' judgments as they are: a policy that
// breaks the judge must not earn more advantage than an honest judged
// response, as it earns no more reward (TestFailedJudgmentPaysTheFloor).
func TestFailedJudgmentGetsNoMoreAdvantage(t *testing.T) {
	p := DefaultParams()
	rubrics := map[string][]schema.Item{
		"srar":            {rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypePitfall, 1), rewardtest.Item(3, schema.TypeBonus, 1), rewardtest.Item(4, schema.TypeSuggest, 2)},
		"srar no pitfall": {rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypeBonus, 1), rewardtest.Item(3, schema.TypeAnswer, 1)},
		"factual_process": {rewardtest.Item(1, schema.TypeFactual, 3), rewardtest.Item(2, schema.TypeProcess, 1), rewardtest.Item(3, schema.TypePitfall, 2)},
	}
	// verdicts of a judged rollout: item j satisfied when bit j of mask is
	// set, at step 1 + j%steps.
	v := func(items []schema.Item, mask, steps int) []schema.Satisfaction {
		out := make([]schema.Satisfaction, len(items))
		for j, it := range items {
			out[j] = rewardtest.Sat(it.ID, mask&(1<<j) != 0, int32(1+j%steps))
		}
		return out
	}
	type member struct {
		text   string
		steps  int
		mask   int
		failed bool
	}
	groups := map[string][]member{
		"a correct failed among correct judged": {{rewardtest.TwoSteps, 2, 0b0101, false}, {rewardtest.TwoSteps, 2, 0b1011, false}, {rewardtest.TwoSteps, 2, 0b0010, true}, {wrongTwoSteps, 2, 0b0110, false}},
		"a wrong failed":                        {{rewardtest.TwoSteps, 2, 0b1111, false}, {wrongTwoSteps, 2, 0b0010, false}, {wrongTwoSteps, 2, 0, true}, {rewardtest.TwoSteps, 2, 0b0001, false}},
		"two failed":                            {{rewardtest.TwoSteps, 2, 0, true}, {wrongTwoSteps, 2, 0, true}, {rewardtest.TwoSteps, 2, 0b0110, false}, {wrongTwoSteps, 2, 0b1001, false}, {correctOneStep, 1, 0b0011, false}},
		"one judged":                            {{rewardtest.TwoSteps, 2, 0, true}, {rewardtest.TwoSteps, 2, 0b0001, false}},
		"all correct":                           {{rewardtest.TwoSteps, 2, 0b0011, false}, {correctOneStep, 1, 0, true}, {rewardtest.TwoSteps, 2, 0b1100, false}},
	}
	schemes := []string{schema.SchemeSRaR, schema.SchemeRGR, schema.SchemeGrounded, schema.SchemeRLCER, schema.SchemePAPO}
	for rname, items := range rubrics {
		lab := rewardtest.Label(items)
		for gname, members := range groups {
			rs := make([]Rollout, len(members))
			for i, m := range members {
				rs[i] = judged(m.text, v(items, m.mask, m.steps))
				if m.failed {
					rs[i] = judged(m.text, nil)
				}
			}
			for _, scheme := range schemes {
				got := ScoreGroup(p, scheme, lab, rs)
				for f, m := range members {
					if !m.failed {
						continue
					}
					var ceiling *advantageCeiling
					alt := make([]Rollout, len(rs))
					for _, judgment := range everyStepJudgment(items, m.steps) {
						copy(alt, rs)
						alt[f].Verdicts, alt[f].JudgeErr = judgment, ""
						g := ScoreGroup(p, scheme, lab, alt)
						if ceiling == nil {
							c := newCeiling(g.Results[f], g.Advantages[f])
							ceiling = &c
						} else {
							ceiling.lower(g.Results[f], g.Advantages[f])
						}
					}
					if bad := ceiling.above(got.Results[f], got.Advantages[f]); len(bad) > 0 {
						t.Errorf("%s, %s, %s: rollout %d, judge failed, gets more than any judgment of it: %v", rname, gname, scheme, f, bad)
					}
				}
			}
		}
	}
}

// TestFailedGroundedJudgmentGetsNoMoreAdvantage is the same for a grounded
// question's group (ScoreGroundedGroup): every criterion scored 0 or its
// full weight.
func TestFailedGroundedJudgmentGetsNoMoreAdvantage(t *testing.T) {
	p := DefaultParams()
	lab := &schema.Label{ID: "q", Scheme: schema.SchemeGrounded, Grounded: &schema.GroundedLabel{Criteria: []schema.Criterion{
		{ID: "c1", Name: "one", Weight: 2}, {ID: "c2", Name: "two", Weight: 1}, {ID: "c3", Name: "three", Weight: 3}}}}
	scores := func(mask int) schema.GroundedScores {
		var g schema.GroundedScores
		for k, c := range lab.Grounded.Criteria {
			s := 0.0
			if mask&(1<<k) != 0 {
				s = c.Weight
			}
			g.Scores = append(g.Scores, s)
		}
		return g
	}
	failed := fmt.Errorf("the judge failed")
	for _, masks := range [][]int{{0b111, 0b001, -1, 0b010}, {-1, -1, 0b100}, {0, -1}, {0b111, 0b111, -1}} {
		ss, errs := make([]schema.GroundedScores, len(masks)), make([]error, len(masks))
		for i, m := range masks {
			if m < 0 {
				errs[i] = failed
			} else {
				ss[i] = scores(m)
			}
		}
		got := ScoreGroundedGroup(p, lab, ss, errs)
		for f, m := range masks {
			if m >= 0 {
				continue
			}
			var ceiling *advantageCeiling
			for mask := range 1 << len(lab.Grounded.Criteria) {
				altS, altE := append([]schema.GroundedScores(nil), ss...), append([]error(nil), errs...)
				altS[f], altE[f] = scores(mask), nil
				g := ScoreGroundedGroup(p, lab, altS, altE)
				if ceiling == nil {
					c := newCeiling(g.Results[f], g.Advantages[f])
					ceiling = &c
				} else {
					ceiling.lower(g.Results[f], g.Advantages[f])
				}
			}
			if bad := ceiling.above(got.Results[f], got.Advantages[f]); len(bad) > 0 {
				t.Errorf("group %v: rollout %d, judge failed, gets more than any judgment of it: %v", masks, f, bad)
			}
		}
	}
}

// TestFailedRLCERJudgmentPastTheFlipBound: a group where the failed
// rollout's verdict on each of more than maxRLCERFlips items decides that
// item's validity (one judged rollout beside it) takes the bound -sqrt(G-1),
// which must still be no more than any judgment of it gives.
func TestFailedRLCERJudgmentPastTheFlipBound(t *testing.T) {
	p := DefaultParams()
	items := make([]schema.Item, maxRLCERFlips+1)
	all := make([]schema.Satisfaction, len(items))
	for j := range items {
		items[j] = rewardtest.Item(int32(j+1), schema.TypeSuggest, 1)
		all[j] = rewardtest.Sat(int32(j+1), true, 1)
	}
	lab := rewardtest.Label(items)
	rs := []Rollout{judged(rewardtest.TwoSteps, all), judged(wrongTwoSteps, nil)}
	got := ScoreGroup(p, schema.SchemeRLCER, lab, rs).Advantages[1]
	for _, v := range everyJudgment(items) {
		alt := []Rollout{rs[0], judged(wrongTwoSteps, v)}
		if a := ScoreGroup(p, schema.SchemeRLCER, lab, alt).Advantages[1]; got.Total > a.Total && !rewardtest.Near(got.Total, a.Total) {
			t.Fatalf("judge failed: advantage %v; a judgment of it gives %v", got.Total, a.Total)
		}
	}
	if !rewardtest.Near(got.Total, -1) {
		t.Errorf("advantage %v, want the bound -sqrt(1)", got.Total)
	}
}
