package reward

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// TestRLCERGroupWithoutVaryingCorrectness: when every judged rollout of a
// group is correct (or every one wrong), corr(v_k, z) is undefined for every
// item, so no item is valid for the group (seed 002 eq. 6-7): r_cot is 0,
// n_valid 0, and the group gets no advantage from satisfaction alone,
// whether the corpus never measured the items or measured them valid.
func TestRLCERGroupWithoutVaryingCorrectness(t *testing.T) {
	p := DefaultParams()
	wrong := "### Step 1: guess\n<answer>7</answer>"
	verdicts := func(a, b bool) []schema.Satisfaction {
		return []schema.Satisfaction{rewardtest.Sat(1, a, 1), rewardtest.Sat(2, b, 1)}
	}
	for _, stored := range []struct {
		name  string
		valid *bool
	}{{"items never measured", nil}, {"items the corpus measured valid", ptr(true)}} {
		items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypePitfall, 2)}
		for j := range items {
			items[j].EmpiricalValid = stored.valid
		}
		lab := rewardtest.Label(items)
		for _, g := range []struct {
			name string
			rs   []Rollout
		}{
			{"all correct", []Rollout{judged(rewardtest.TwoSteps, verdicts(true, false)), judged(rewardtest.TwoSteps, verdicts(false, true)), judged(rewardtest.TwoSteps, verdicts(true, true))}},
			{"all wrong", []Rollout{judged(wrong, verdicts(true, false)), judged(wrong, verdicts(false, false)), judged(wrong, verdicts(false, true))}},
			{"correctness varies only among the unjudged", []Rollout{judged(rewardtest.TwoSteps, verdicts(true, false)), judged(rewardtest.TwoSteps, verdicts(false, true)), judged(wrong, nil)}},
		} {
			got := ScoreGroup(p, schema.SchemeRLCER, lab, g.rs)
			for j, v := range got.Validity {
				if v.Valid != nil || v.Corr != nil {
					t.Errorf("%s, %s: item %d validity %+v, want corr and valid null (undefined)", stored.name, g.name, j+1, v)
				}
			}
			judgedRewards := map[float64]bool{}
			for i, r := range got.Results {
				if r.Components["cot"] != 0 || r.Metrics["n_valid"] != 0 {
					t.Errorf("%s, %s: rollout %d: cot %v, n_valid %v; want 0, 0", stored.name, g.name, i, r.Components["cot"], r.Metrics["n_valid"])
				}
				if g.rs[i].JudgeOK() {
					judgedRewards[r.Reward] = true
					if a := got.Advantages[i]; a.Total != 0 && g.name != "correctness varies only among the unjudged" {
						t.Errorf("%s, %s: rollout %d: advantage %+v from satisfaction alone", stored.name, g.name, i, a)
					}
				}
			}
			if len(judgedRewards) != 1 {
				t.Errorf("%s, %s: the judged rollouts, all equally correct, got rewards %v", stored.name, g.name, judgedRewards)
			}
		}
	}
}

// TestRLCERStoredUndefinedValidity: scoring one response (no group), RLCER
// takes the validity the corpus stored. An item the empirical stage
// measured (sat_rate set) over rollouts whose correctness did not vary has
// no validity (corr and empirical_valid null): corr(v_k, z) was undefined,
// so it is not valid and gives no r_cot. An item never measured (the stage
// was off) still counts as valid; one measured valid counts.
func TestRLCERStoredUndefinedValidity(t *testing.T) {
	p := DefaultParams()
	rate := 0.5
	for _, tc := range []struct {
		name    string
		measure func(*schema.Item)
		cot     float64
	}{
		{"measured, correctness constant", func(it *schema.Item) { it.SatRate = &rate }, 0},
		{"never measured", func(*schema.Item) {}, 1},
		{"measured valid", func(it *schema.Item) { it.SatRate, it.Corr, it.EmpiricalValid = &rate, ptr(0.5), ptr(true) }, 1},
		{"measured not valid", func(it *schema.Item) { it.SatRate, it.Corr, it.EmpiricalValid = &rate, ptr(0.1), ptr(false) }, 0},
	} {
		items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1)}
		tc.measure(&items[0])
		r := judged(rewardtest.TwoSteps, []schema.Satisfaction{rewardtest.Sat(1, true, 1)})
		got := Score(p, schema.SchemeRLCER, rewardtest.Label(items), &r, nil)
		if got.Components["cot"] != tc.cot || !rewardtest.Near(got.Reward, 1+tc.cot) {
			t.Errorf("%s: cot %v, reward %v; want cot %v", tc.name, got.Components["cot"], got.Reward, tc.cot)
		}
	}
}
