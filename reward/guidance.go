package reward

import "github.com/rubricforge/rubricforge/schema"

// RGR-GRPO's exploration assessment (seed 003, section 2.3, step 1): of a
// group's on-policy responses, the best (eq. 7, the highest reward) either
// meets every criterion, and on-policy exploration suffices, or its failed
// criteria (eq. 8) and the response go into the refinement template
// (appendix E.2), and the policy's refined response joins the group as its
// off-policy member, whose advantage is eq. 1 over all G (step 3).

// Exploration is the assessment of one group.
type Exploration struct {
	// Best is the index of the highest-reward response among the
	// candidates (the first of equal ones); -1 when no candidate was
	// judged.
	Best int
	// Needed is false exactly when the best response meets every criterion:
	// every positive item satisfied, no PITFALL fallen into. It is false
	// when there is no best response either (nothing to refine).
	Needed bool
	// Failed are the ids of the criteria the best response does not meet,
	// in rubric order.
	Failed []int32
}

// Explore assesses a group: rewards are the responses' rewards under the
// scheme, rs their verdicts on items (nil for a failed judgment, which is
// never the best: its reward is a floor, not a judgment), and candidate
// marks the responses eligible (the on-policy ones); nil makes every
// response a candidate.
func Explore(items []schema.Item, rewards []float64, rs []Rollout, candidate []bool) Exploration {
	ex := Exploration{Best: -1}
	bestMet := -1
	for i := range rs {
		if !rs[i].JudgeOK() || candidate != nil && !candidate[i] || i >= len(rewards) {
			continue
		}
		met := criteriaMet(items, rs[i].Verdicts)
		if ex.Best < 0 || rewards[i] > rewards[ex.Best] || rewards[i] == rewards[ex.Best] && met > bestMet {
			ex.Best, bestMet = i, met
		}
	}
	if ex.Best < 0 {
		return ex
	}
	ex.Failed = []int32{}
	v := rs[ex.Best].Verdicts
	for j, it := range items {
		if j >= len(v) || !criterionMet(it, v[j]) {
			ex.Failed = append(ex.Failed, it.ID)
		}
	}
	ex.Needed = len(ex.Failed) > 0
	return ex
}

// criteriaMet counts the criteria a response meets; a tie in reward goes
// to the response meeting more (so a perfect response among equals is the
// best, and no refinement is asked for when the group has one).
func criteriaMet(items []schema.Item, v []schema.Satisfaction) int {
	n := 0
	for j, it := range items {
		if j < len(v) && criterionMet(it, v[j]) {
			n++
		}
	}
	return n
}
