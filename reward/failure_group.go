package reward

import (
	"math"
	"slices"

	"github.com/rubricforge/rubricforge/schema"
)

// A rollout whose judgment failed is paid the floor reward (fallback). Its
// group advantages must not pay more either: were they left as the
// formulas give them, a failed rollout would enter no SRaR step group (every
// step offset 0) and not PAPO's correct set (process advantage 0), while an
// honest judged rollout that fell into a PITFALL at a step, or reasoned
// weakly, gets a negative one; a policy would learn to break the judge.
// So, under the floor policy, every term and step of a failed rollout's
// advantage is lowered to the lowest any judgment of it could have given it
// in its group, the other rollouts as they are. The others' advantages stay
// the paper's, over the judged rollouts.
//
// Per scheme (each formula is increasing in the rollout's own value, so the
// lowest comes from its lowest value):
//   - srar: the outcome advantage does not depend on the judgment. The
//     offset of step k is the lowest of 0 (no item at step k) and the
//     normalized offset of the lowest d_k, every PITFALL fallen into at k
//     (-|R_PIT|, or 0 without PITFALLs), in G_k with the rollout in it.
//   - papo: the outcome advantage does not depend on the judgment; a
//     correct rollout's process advantage is that of r_proc = 0 in C with
//     the rollout in it.
//   - rgr, grounded: the floor reward is the lowest, and so is its
//     advantage: nothing to lower.
//   - rlcer: a judgment changes which items are valid in the group, and so
//     the others' rewards too. Only items whose validity the rollout's
//     verdict on them decides matter; every verdict on them is tried, the
//     others chosen to give the lowest r_cot. Past maxRLCERFlips such items
//     the advantage is -sqrt(G-1), below any member's of a group of G.

// maxRLCERFlips bounds the items whose every verdict is tried (2^n group
// rewards computed per failed rollout).
const maxRLCERFlips = 12

// floorStepDeltas sets each step delta of a floored rollout to the lowest
// any judgment could give a step: every PITFALL fallen into at that step.
func floorStepDeltas(steps []StepResult, items []schema.Item, p Params) {
	low := lowestStepDelta(p, items)
	for i := range steps {
		steps[i].Delta = low
	}
}

// lowestStepDelta is the lowest d_k any judgment gives a step: -|R_PIT|
// when the rubric has PITFALLs, else 0.
func lowestStepDelta(p Params, items []schema.Item) float64 {
	if CountTypes(items).Pitfall > 0 {
		return -math.Abs(p.RPit)
	}
	return 0
}

// floorAdvantages lowers the advantages of the floored rollouts of a group.
func floorAdvantages(p Params, scheme string, lab *schema.Label, rs []Rollout, ss []scored, adv []Advantage) {
	for f := range rs {
		if !ss[f].floored {
			continue
		}
		a := &adv[f]
		switch scheme {
		case schema.SchemeSRaR:
			lowestSRaROffsets(p, lab.Rubric, rs, ss, f, a)
		case schema.SchemePAPO:
			if rs[f].Correct {
				a.Process = min(a.Process, lowestPAPOProcess(p, rs, ss, f))
			}
		case schema.SchemeRLCER:
			a.Outcome = min(a.Outcome, lowestRLCEROutcome(p, lab.Rubric, rs, f))
		}
		a.Total = a.Outcome + a.Process
	}
}

// lowestSRaROffsets lowers each step offset of rollout f to the lowest a
// judgment of f could give it.
func lowestSRaROffsets(p Params, items []schema.Item, rs []Rollout, ss []scored, f int, a *Advantage) {
	if len(items) == 0 || len(a.Steps) == 0 {
		return // no item to attribute to a step: every offset is 0 whatever the judgment
	}
	d := make([][]StepDelta, len(rs))
	for i := range rs {
		d[i] = ss[i].rubric.Steps
	}
	low := lowestStepDelta(p, items)
	mine := make([]StepDelta, 0, len(rs[f].Steps))
	for _, sp := range rs[f].Steps {
		mine = append(mine, StepDelta{Step: sp.Step, D: low})
	}
	d[f] = mine
	dbar := NormalizeSteps(d, p.Epsilon)[f]
	for k := range a.Steps {
		if j := slices.IndexFunc(dbar, func(s StepDelta) bool { return s.Step == a.Steps[k].Step }); j >= 0 {
			a.Steps[k].Offset = min(a.Steps[k].Offset, dbar[j].D)
		}
		a.Steps[k].Advantage = a.Outcome + a.Steps[k].Offset
	}
}

// lowestPAPOProcess is the process advantage of the correct rollout f with
// r_proc 0 (no criterion met) in the correct set.
func lowestPAPOProcess(p Params, rs []Rollout, ss []scored, f int) float64 {
	proc := make([]float64, len(rs))
	inC := make([]bool, len(rs))
	for i := range rs {
		proc[i], inC[i] = ss[i].process, rs[i].Correct && rs[i].JudgeOK()
	}
	proc[f], inC[f] = 0, true
	return PAPOProcessAdvantages(proc, inC, p.Epsilon)[f]
}

// lowestRLCEROutcome is the lowest RLCER group advantage rollout f gets
// over its judgments.
func lowestRLCEROutcome(p Params, items []schema.Item, rs []Rollout, f int) float64 {
	alt := slices.Clone(rs)
	verdicts := func(satisfied func(j int) bool) []schema.Satisfaction {
		v := make([]schema.Satisfaction, len(items))
		for j, it := range items {
			v[j] = schema.Satisfaction{ID: it.ID, Satisfied: satisfied(j), Step: -1}
		}
		return v
	}
	alt[f].Verdicts = verdicts(func(int) bool { return false })
	unsat := GroupValidity(p, items, alt)
	alt[f].Verdicts = verdicts(func(int) bool { return true })
	satis := GroupValidity(p, items, alt)
	var flips []int // items whose validity f's verdict on them decides
	for j := range items {
		if isValid(unsat[j]) != isValid(satis[j]) {
			flips = append(flips, j)
		}
	}
	if len(flips) > maxRLCERFlips {
		return -math.Sqrt(float64(len(rs) - 1))
	}
	lowest := math.Inf(1)
	rewards := make([]float64, len(rs))
	valid := make([]bool, len(items))
	for mask := range 1 << len(flips) {
		// Items whose validity f does not decide: satisfied when that
		// lowers r_cot (negative points); the deciding ones as mask says.
		alt[f].Verdicts = verdicts(func(j int) bool {
			if k := slices.Index(flips, j); k >= 0 {
				return mask&(1<<k) != 0
			}
			return SignedPoints(items[j]) < 0
		})
		for j, v := range GroupValidity(p, items, alt) {
			valid[j] = isValid(v)
		}
		for i := range alt {
			rewards[i] = RLCEROutcome(alt[i].Correct)
			if alt[i].JudgeOK() {
				rewards[i] += RLCERCoT(items, alt[i].Verdicts, valid)
			}
		}
		lowest = min(lowest, GroupAdvantages(rewards, p.Epsilon)[f])
	}
	return lowest
}

func isValid(v ItemGroupValidity) bool { return v.Valid != nil && *v.Valid }
