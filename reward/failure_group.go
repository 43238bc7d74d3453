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
// The others' advantages stay the paper's, over the judged rollouts. Under
// the floor policy, every term and step of a failed rollout's advantage is
// lowered to the lowest of
//
//   - what any judgment of it could have given it in its group, the other
//     rollouts as they are (the least favourable verdicts), and
//   - what each judged group-mate whose work it could equal gets (the twin
//     rule): the outcome, process and total advantages and each step's
//     advantage of a judged rollout with the same correctness, format and
//     cut-off (the verdicts are all that could tell them apart), and each
//     step's offset of any judged rollout with that step.
//
// The second bound is needed: the first puts the failed rollout into the
// normalizations, where its own value moves the mean and the spread, so a
// judged twin left out of them with the same low verdicts can get less (a
// lower d among higher ones is more extreme the fewer share it).
//
// The least favourable verdicts, per scheme (each formula is increasing in
// the rollout's own value, so the lowest comes from its lowest value):
//   - srar: the outcome advantage does not depend on the judgment. The
//     offset of step k is the lowest of 0 (no item at step k) and the
//     normalized offset of the lowest d_k, every PITFALL fallen into at k
//     (-|R_PIT|, or 0 without PITFALLs), in G_k with the rollout in it
//     (normalizeGroupSteps: a step no other rollout has gets the rollout's
//     lowest compared offset).
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
				a.Process = min(a.Process, lowestPAPOProcess(p, rs, ss, f), lowestInC(rs, ss, adv))
			}
		case schema.SchemeRLCER:
			a.Outcome = min(a.Outcome, lowestRLCEROutcome(p, lab.Rubric, rs, f))
		}
		capAtTwins(rs, ss, f, adv)
	}
}

// judgedAsIs reports whether rollout i's advantages are the paper's over its
// verdicts: judged, and not floored.
func judgedAsIs(rs []Rollout, ss []scored, i int) bool { return rs[i].JudgeOK() && !ss[i].floored }

// sameWork reports whether rollouts i and j differ only in what a judge
// says of them: the same correctness, format and cut-off.
func sameWork(a, b *Rollout) bool {
	return a.Correct == b.Correct && a.FormatOK == b.FormatOK && (a.CutOff == "") == (b.CutOff == "")
}

// capAtTwins lowers the advantage of floored rollout f, term by term and
// step by step, to that of every judged group-mate whose work it could
// equal (the twin rule), and each step offset to that of every judged
// rollout with that step; the totals and step advantages follow.
func capAtTwins(rs []Rollout, ss []scored, f int, adv []Advantage) {
	a := &adv[f]
	for j := range rs {
		if j == f || !judgedAsIs(rs, ss, j) {
			continue
		}
		b := &adv[j]
		if sameWork(&rs[f], &rs[j]) {
			a.Outcome, a.Process = min(a.Outcome, b.Outcome), min(a.Process, b.Process)
		}
		for k := range a.Steps {
			if m := slices.IndexFunc(b.Steps, func(s StepAdvantage) bool { return s.Step == a.Steps[k].Step }); m >= 0 {
				a.Steps[k].Offset = min(a.Steps[k].Offset, b.Steps[m].Offset)
			}
		}
	}
	a.Total = a.Outcome + a.Process
	for k := range a.Steps {
		a.Steps[k].Advantage = a.Outcome + a.Steps[k].Offset
	}
}

// lowestSRaROffsets lowers each step offset of rollout f to the lowest a
// judgment of f could give it: f's d at the lowest at every step where it
// is compared, and, since where f has items decides which of the others'
// steps are lonely (and so which of them are charged into f's steps),
// every choice of f's items among the steps where exactly one other
// rollout has items. Past maxLonelyChoices such steps every offset is
// -sqrt(G-1), below any rollout's in a group of G.
func lowestSRaROffsets(p Params, items []schema.Item, rs []Rollout, ss []scored, f int, a *Advantage) {
	if len(items) == 0 || len(a.Steps) == 0 {
		return // no item to attribute to a step: every offset is 0 whatever the judgment
	}
	g := groupSteps(rs, ss)
	g.fixed, g.floor = f, lowestStepDelta(p, items)
	others := make(map[int32]int)
	for j, steps := range g.d {
		if j != f {
			for _, s := range steps {
				others[s.Step]++
			}
		}
	}
	var choice []int32 // f's steps where exactly one other rollout has items
	for _, sp := range rs[f].Steps {
		if others[sp.Step] == 1 {
			choice = append(choice, sp.Step)
		}
	}
	if len(choice) > maxLonelyChoices {
		for k := range a.Steps {
			a.Steps[k].Offset = min(a.Steps[k].Offset, -math.Sqrt(float64(len(rs)-1)))
		}
		return
	}
	for mask := range 1 << len(choice) {
		mine := make([]StepDelta, 0, len(rs[f].Steps))
		for _, sp := range rs[f].Steps {
			if k := slices.Index(choice, sp.Step); k < 0 || mask&(1<<k) != 0 {
				mine = append(mine, StepDelta{Step: sp.Step, D: g.floor})
			}
		}
		g.d[f] = mine
		dbar := normalizeGroupSteps(g, p.Epsilon)[f]
		for k := range a.Steps {
			if j := slices.IndexFunc(dbar, func(s StepDelta) bool { return s.Step == a.Steps[k].Step }); j >= 0 {
				a.Steps[k].Offset = min(a.Steps[k].Offset, dbar[j].D)
			}
		}
	}
}

// maxLonelyChoices bounds the steps of a floored rollout whose every choice
// is tried (2^n normalizations).
const maxLonelyChoices = 8

// lowestInC is the lowest process advantage of a judged member of PAPO's
// correct set C (0 when there is none): a failed correct rollout could
// have reasoned as any of them.
func lowestInC(rs []Rollout, ss []scored, adv []Advantage) float64 {
	low := 0.0
	for j := range rs {
		if rs[j].Correct && judgedAsIs(rs, ss, j) {
			low = min(low, adv[j].Process)
		}
	}
	return low
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
