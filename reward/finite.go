package reward

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/rubricforge/rubricforge/schema"
)

// A reward that is not a finite number cannot be sent (JSON has no NaN or
// Inf) and must never reach a trainer. Weights are bounded when a label is
// read (schema.MaxLabelWeight) and the constants by Params.Check, so the
// formulas stay finite; a corpus rubric is not read through ParseLabel, and
// this is the last guard: a non-finite result is its own item's error, and
// a group's advantages are computed without it.

// nonFinite names the first value of r that is not a finite number ("" when
// every one is): the reward, the score, a component, a metric (the first
// in key order) or a step's delta.
func nonFinite(r *Result) string {
	switch {
	case !finite(r.Reward):
		return fmt.Sprintf("reward %v", r.Reward)
	case !finite(r.Score):
		return fmt.Sprintf("score %v", r.Score)
	}
	for _, kind := range []struct {
		name string
		m    Values
	}{{"components", r.Components}, {"metrics", r.Metrics}} {
		for _, k := range slices.Sorted(maps.Keys(kind.m)) {
			if v := kind.m[k]; !finite(v) {
				return fmt.Sprintf("%s.%s %v", kind.name, k, v)
			}
		}
	}
	for i, s := range r.Steps {
		if !finite(s.Delta) {
			return fmt.Sprintf("steps[%d].delta %v", i, s.Delta)
		}
	}
	return ""
}

// allFinite reports whether every value of r is finite, without allocating.
func allFinite(r *Result) bool {
	if !finite(r.Reward) || !finite(r.Score) {
		return false
	}
	for _, m := range []Values{r.Components, r.Metrics} {
		for _, v := range m {
			if !finite(v) {
				return false
			}
		}
	}
	for _, s := range r.Steps {
		if !finite(s.Delta) {
			return false
		}
	}
	return true
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// finiteOrError is r, or r's error result when a value of r is not finite.
func finiteOrError(r Result) Result {
	if allFinite(&r) {
		return r
	}
	return nonFiniteError(r, nonFinite(&r))
}

func nonFiniteError(r Result, what string) Result {
	e := ErrorResult(r.RequestID, r.ProblemID, r.Scheme, fmt.Sprintf(
		"the %s is not a finite number: the rubric's weights (or the formulas' constants) are too large to score with", what))
	e.Correct = r.Correct
	return e
}

// finiteAdvantages is groupAdvantages over the rollouts whose results are
// finite; a rollout whose result is not (made its error here), or whose
// advantage comes out non-finite, gets advantage 0.
func finiteAdvantages(p Params, scheme string, lab *schema.Label, rs []Rollout, ss []scored, results []Result, mem *GroupMemory) []Advantage {
	var out []Advantage
	if slices.IndexFunc(results, func(r Result) bool { return !allFinite(&r) }) < 0 {
		out = groupAdvantages(p, scheme, lab, rs, ss, results, mem)
	} else {
		out = advantagesOfFinite(p, scheme, lab, rs, ss, results, mem)
	}
	for i := range out {
		if !finiteAdvantage(&out[i]) {
			results[i] = nonFiniteError(results[i], "advantage")
			out[i] = Advantage{Steps: []StepAdvantage{}}
		}
	}
	return out
}

// advantagesOfFinite makes every non-finite result its error and computes
// the group advantages over the others; the errors get advantage 0.
func advantagesOfFinite(p Params, scheme string, lab *schema.Label, rs []Rollout, ss []scored, results []Result, mem *GroupMemory) []Advantage {
	var keep []int
	for i := range results {
		if allFinite(&results[i]) {
			keep = append(keep, i)
		} else {
			results[i] = nonFiniteError(results[i], nonFinite(&results[i]))
		}
	}
	subRs, subSs, subResults := make([]Rollout, len(keep)), make([]scored, len(keep)), make([]Result, len(keep))
	for k, i := range keep {
		subRs[k], subSs[k], subResults[k] = rs[i], ss[i], results[i]
	}
	sub := groupAdvantages(p, scheme, lab, subRs, subSs, subResults, mem)
	out := make([]Advantage, len(results))
	for i := range out {
		out[i].Steps = []StepAdvantage{}
	}
	for k, i := range keep {
		out[i] = sub[k]
	}
	return out
}

func finiteAdvantage(a *Advantage) bool {
	if !finite(a.Outcome) || !finite(a.Process) || !finite(a.Total) {
		return false
	}
	for _, s := range a.Steps {
		if !finite(s.Offset) || !finite(s.Advantage) {
			return false
		}
	}
	return true
}
