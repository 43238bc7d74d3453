package reward

import "slices"

// Seed 000 normalizes a step's rubric reward d_k across G_k, the rollouts
// of the group with an item at step k (eq. 4); d̄ is 0 when |G_k| <= 1, and
// an item at no step of the response (step 0, the whole solution; -1,
// none; or beyond its last step) enters no G_k. So a PITFALL fallen into
// at a step no group-mate has an item at (an extra "### Step 3", text
// before "### Step 1") would cost nothing in the step advantages, while
// the same flaw at a shared step costs a negative offset: a policy would
// learn to write its flaws where no other rollout writes. Such a flaw is
// charged instead:
//
//   - a rollout's charge is the sum of its PITFALL deltas at no step of its
//     own (SRaRRubric.Unplaced) and of the negative d_k of its lonely steps
//     (steps k with G_k = {the rollout});
//   - a negative charge is added to the rollout's d_k at each of its steps
//     that another rollout has an item at, joining those G_k when it was
//     not in them, before eq. 4; so the flaw costs at every step where the
//     rollout is compared, at least what it costs at one of them;
//   - a lonely step with a negative d_k gets the lowest offset of 0 and of
//     the rollout's charged steps.
//
// A positive d_k at a lonely step, or a satisfied SUGGEST or BONUS at no
// step, still earns no offset (its |G_k| <= 1), as before: nothing that
// shares no step earns, and no flaw escapes. Without charges this is eq. 4
// itself (NormalizeSteps).

// stepGroup is what the step normalization of a group takes: d[i] is
// rollout i's step rubric rewards (sorted by step), with its PITFALL deltas
// at no step of its own (ss[i].rubric.Unplaced) and its number of steps
// (len(rs[i].Steps)). fixed, when not -1, is a floored rollout
// (lowestSRaROffsets): it has no charge, and its d is floor at every step
// where another rollout has an item; its own items (d[fixed], each floor)
// say where it has them, for the others' lonely steps.
type stepGroup struct {
	d     [][]StepDelta
	rs    []Rollout
	ss    []scored
	fixed int
	floor float64
}

// groupSteps is the stepGroup of a group's rollouts (no fixed rollout).
func groupSteps(rs []Rollout, ss []scored) stepGroup {
	g := stepGroup{d: make([][]StepDelta, len(rs)), rs: rs, ss: ss, fixed: -1}
	for i := range rs {
		g.d[i] = ss[i].rubric.Steps
	}
	return g
}

func (g *stepGroup) spans(i int) int { return len(g.rs[i].Steps) }

// charge is rollout i's charge: its PITFALL deltas at no step of its own
// plus the negative d_k of its lonely steps (counts[k] == 1); 0 for the
// fixed rollout, or when not negative.
func (g *stepGroup) charge(i int, counts []int) float64 {
	if i == g.fixed {
		return 0
	}
	c := g.ss[i].rubric.Unplaced
	for _, s := range g.d[i] {
		if counts[s.Step] == 1 {
			c += min(0, s.D)
		}
	}
	return min(0, c)
}

// normalizeGroupSteps is eq. 4 over a group's step rubric rewards, with
// the flaws that share no step charged (see above). The result has, per
// rollout, an offset for each step of its d and each step it was charged
// at, sorted by step.
func normalizeGroupSteps(g stepGroup, eps float64) [][]StepDelta {
	maxStep := int32(0)
	for _, steps := range g.d {
		for _, s := range steps {
			maxStep = max(maxStep, s.Step)
		}
	}
	var buf [32]int
	var counts []int
	if int(maxStep) < len(buf) {
		counts = buf[:maxStep+1]
	} else {
		counts = make([]int, maxStep+1)
	}
	for _, steps := range g.d {
		for _, s := range steps {
			counts[s.Step]++
		}
	}
	charged, total := 0, 0
	for i := range g.d {
		if g.charge(i, counts) < 0 || i == g.fixed {
			charged++
			total += len(g.d[i]) + g.spans(i)
		}
	}
	if charged == 0 {
		return NormalizeSteps(g.d, eps)
	}
	shared := func(i int, k int32) bool { // another rollout has an item at step k
		if int(k) >= len(counts) {
			return false
		}
		n := counts[k]
		if slices.ContainsFunc(g.d[i], func(s StepDelta) bool { return s.Step == k }) {
			n--
		}
		return n > 0
	}
	charges := make([]float64, len(g.d))
	d := make([][]StepDelta, len(g.d))
	all := make([]StepDelta, 0, total) // one allocation for every charged rollout's
	for i, steps := range g.d {
		c := g.charge(i, counts)
		charges[i] = c
		if c == 0 && i != g.fixed {
			d[i] = steps
			continue
		}
		start := len(all)
		for k := int32(1); k <= int32(g.spans(i)); k++ {
			j := slices.IndexFunc(steps, func(s StepDelta) bool { return s.Step == k })
			switch {
			case shared(i, k) && i == g.fixed:
				all = append(all, StepDelta{Step: k, D: g.floor})
			case shared(i, k) && j >= 0:
				all = append(all, StepDelta{Step: k, D: steps[j].D + c})
			case shared(i, k):
				all = append(all, StepDelta{Step: k, D: c})
			case j >= 0:
				all = append(all, steps[j]) // lonely: its offset is set below
			}
		}
		for _, s := range steps { // steps beyond the spans (a caller's own d)
			if int(s.Step) > g.spans(i) {
				all = append(all, s)
			}
		}
		d[i] = all[start:len(all):len(all)]
	}
	dbar := NormalizeSteps(d, eps)
	for i, steps := range d {
		if charges[i] == 0 && i != g.fixed {
			continue
		}
		low := 0.0
		for j, s := range steps {
			if shared(i, s.Step) {
				low = min(low, dbar[i][j].D)
			}
		}
		for j, s := range steps {
			if !shared(i, s.Step) && s.D < 0 {
				dbar[i][j].D = min(dbar[i][j].D, low)
			}
		}
	}
	return dbar
}
