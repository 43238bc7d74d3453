package reward

import "github.com/rubricforge/rubricforge/schema"

// A rollout whose finish reason says it was cut off (Rollout.CutOff) gives
// no answer, so it is not correct and its outcome terms are those of a wrong
// answer: never above a group-mate's that ended with the same text. Its SRaR
// step offsets, RLCER r_cot and rubric rewards come from the same verdicts
// as such a group-mate's, so they are the same. PAPO's process advantage is
// the one term a wrong answer is paid more on: the paper gives it 0 outside
// the correct set, while a correct rollout that reasoned weakly gets a
// negative one, so a cut-off rollout would outrank its finished twin there
// (and in the total). So its process advantage is the lowest of its group:
// 0, or below it the lowest a member of the correct set gets.

// capCutOffAdvantages lowers the PAPO process advantage of every cut-off
// rollout of the group to the lowest any rollout of the group gets.
func capCutOffAdvantages(scheme string, rs []Rollout, adv []Advantage) {
	if scheme != schema.SchemePAPO {
		return
	}
	lowest := 0.0
	for i := range adv {
		lowest = min(lowest, adv[i].Process)
	}
	for i := range rs {
		if rs[i].CutOff != "" {
			adv[i].Process = min(adv[i].Process, lowest)
			adv[i].Total = adv[i].Outcome + adv[i].Process
		}
	}
}
