package reward

import "github.com/rubricforge/rubricforge/schema"

// RubricReward is the part of scheme's reward that one judged rollout's
// verdicts on items earn, the outcome terms left out (srar's r_base,
// rlcer's r_outcome, papo's outcome reward): what a rubric's quality is
// measured by when the question is whether the reward it pays separates
// good responses from bad.
//
//   - srar: Δ_i, the type budgets of the satisfied SUGGEST, PITFALL and
//     BONUS items (seed 000 eq. 3); weights and ANSWER items do not enter.
//   - rgr: seed 003 eq. 5 (1 when every FACTUAL item holds, else the
//     weighted fraction).
//   - grounded: seed 001's clipped weighted score.
//   - rlcer: r_cot over the items marked valid (seed 002 eq. 6).
//   - papo: the process reward r_proc a correct rollout gets (seed 004),
//     the clipped weighted score; papo uses it only among correct
//     rollouts.
//
// It is what Score pays a judged rollout (TestRubricRewardIsWhatScorePays).
func RubricReward(p Params, scheme string, items []schema.Item, verdicts []schema.Satisfaction, valid []bool) float64 {
	switch scheme {
	case schema.SchemeSRaR:
		return SRaRDeltas(p, items, verdicts, 0).Total()
	case schema.SchemeRGR:
		r, _ := RGRReward(items, verdicts)
		return r
	case schema.SchemeRLCER:
		return RLCERCoT(items, verdicts, valid)
	}
	return clip01(WeightedFraction(items, verdicts))
}
