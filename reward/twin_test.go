package reward

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// stepsText is a response of n steps, correct (answer 5) or not.
func stepsText(n int, correct bool) string {
	answer := "6"
	if correct {
		answer = "5"
	}
	var b strings.Builder
	for k := 1; k <= n; k++ {
		fmt.Fprintf(&b, "### Step %d: Work.\n2+3 = %s.\n", k, answer)
	}
	return b.String() + "<answer>" + answer + "</answer>"
}

// randomVerdicts are verdicts on items of a response of n steps: each item
// met or not, at a step from -1 (none) and 0 (the whole solution) to one
// beyond the response's last.
func randomVerdicts(rng *rand.Rand, items []schema.Item, n int) []schema.Satisfaction {
	v := make([]schema.Satisfaction, len(items))
	for j, it := range items {
		v[j] = rewardtest.Sat(it.ID, rng.IntN(2) == 0, int32(rng.IntN(n+3)-1))
	}
	return v
}

// everyPlacedJudgment is every verdict set on items of a response of n
// steps with each item met or not at a step from -1 to n.
func everyPlacedJudgment(items []schema.Item, n int) [][]schema.Satisfaction {
	choices := 2 * (n + 2)
	total := 1
	for range items {
		total *= choices
	}
	out := make([][]schema.Satisfaction, 0, total)
	for m := range total {
		v := make([]schema.Satisfaction, len(items))
		for j, it := range items {
			c := m % choices
			m /= choices
			v[j] = rewardtest.Sat(it.ID, c%2 == 1, int32(c/2-1))
		}
		out = append(out, v)
	}
	return out
}

// TestTwinRuleRandomGroups is the twin rule over many more groups than the
// HTTP test sends, in the formulas themselves: random groups of 1 to 12
// rollouts of 1 to 4 steps, correct or not, with random verdicts (steps
// -1, 0, in the response and beyond it) and one to three failed judgments,
// each failed rollout a twin of a judged one. Every failed rollout gets,
// term by term and step by step, no more than each judged rollout of the
// same correctness and format, no step offset above any judged rollout's
// at that step, and, in one group in fifty (each judgment is a group
// scored again), when it has at most two steps, no more than any judgment
// of it (every verdict set with steps -1 to 2) gives it in that group.
func TestTwinRuleRandomGroups(t *testing.T) {
	t.Parallel()
	seed := uint64(38)
	rng := rand.New(rand.NewPCG(seed, seed))
	p := DefaultParams()
	items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypePitfall, 1), rewardtest.Item(3, schema.TypePitfall, 2)}
	lab := rewardtest.Label(items)
	schemes := []string{schema.SchemeSRaR, schema.SchemeRGR, schema.SchemeGrounded, schema.SchemeRLCER, schema.SchemePAPO}
	bad := 0
	for g := range 400 {
		n := 1 + rng.IntN(12)
		rs := make([]Rollout, n)
		for i := range rs {
			steps := 1 + rng.IntN(4)
			rs[i] = judged(stepsText(steps, rng.IntN(2) == 0), randomVerdicts(rng, items, steps))
		}
		var failed []int
		for range 1 + rng.IntN(3) {
			f := rng.IntN(n)
			twin := rs[rng.IntN(n)]
			rs[f] = judged(twin.Response, nil)
			failed = append(failed, f)
		}
		for _, scheme := range schemes {
			got := ScoreGroup(p, scheme, lab, rs)
			for _, f := range failed {
				if rs[f].JudgeOK() {
					continue
				}
				for j := range rs {
					if !rs[j].JudgeOK() {
						continue
					}
					if msg := twinAbove(got, &rs[f], &rs[j], f, j); msg != "" {
						if bad++; bad <= 5 {
							t.Errorf("group %d (seed %d), %s: failed rollout %d above judged %d: %s", g, seed, scheme, f, j, msg)
						}
					}
				}
				if len(rs[f].Steps) > 2 || g%50 != 0 {
					continue
				}
				var ceiling *advantageCeiling
				alt := make([]Rollout, n)
				for _, judgment := range everyPlacedJudgment(items, len(rs[f].Steps)) {
					copy(alt, rs)
					alt[f].Verdicts, alt[f].JudgeErr = judgment, ""
					a := ScoreGroup(p, scheme, lab, alt)
					if ceiling == nil {
						c := newCeiling(a.Results[f], a.Advantages[f])
						ceiling = &c
					} else {
						ceiling.lower(a.Results[f], a.Advantages[f])
					}
				}
				if msg := ceiling.above(got.Results[f], got.Advantages[f]); len(msg) > 0 {
					if bad++; bad <= 5 {
						t.Errorf("group %d (seed %d), %s: failed rollout %d above its least favourable judgment: %v", g, seed, scheme, f, msg)
					}
				}
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d in all", bad)
	}
}

// twinAbove says where failed rollout f of group g gets more than judged
// rollout j ("" nowhere): on any term or step advantage when they are of
// the same work (sameWork), on any step offset at a step both have.
func twinAbove(g Group, rf, rj *Rollout, f, j int) string {
	var out []string
	check := func(name string, got, ceiling float64) {
		if got > ceiling && !rewardtest.Near(got, ceiling) {
			out = append(out, fmt.Sprintf("%s %.4g > %.4g", name, got, ceiling))
		}
	}
	a, b := g.Advantages[f], g.Advantages[j]
	same := sameWork(rf, rj)
	if same {
		check("reward", g.Results[f].Reward, g.Results[j].Reward)
		check("outcome", a.Outcome, b.Outcome)
		check("process", a.Process, b.Process)
		check("total", a.Total, b.Total)
	}
	for _, s := range a.Steps {
		for _, t := range b.Steps {
			if s.Step == t.Step {
				check(fmt.Sprintf("step %d offset", s.Step), s.Offset, t.Offset)
				if same {
					check(fmt.Sprintf("step %d advantage", s.Step), s.Advantage, t.Advantage)
				}
			}
		}
	}
	return strings.Join(out, ", ")
}

// TestStepChargesKeepEq4: in a group where no PITFALL is fallen into at a
// step no other rollout has an item at, or at no step, the step offsets
// are seed 000's eq. 4 (NormalizeSteps) exactly; a rollout that then falls
// into one at no step gets no step offset above what it had.
func TestStepChargesKeepEq4(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	p := DefaultParams()
	items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypeBonus, 1), rewardtest.Item(3, schema.TypePitfall, 1)}
	for g := range 300 {
		n := 2 + rng.IntN(8)
		rs := make([]Rollout, n)
		ss := make([]scored, n)
		for i := range rs {
			steps := 1 + rng.IntN(3)
			v := randomVerdicts(rng, items, steps)
			v[2].Satisfied = false // no PITFALL anywhere
			rs[i] = judged(stepsText(steps, true), v)
			ss[i].rubric = SRaRDeltas(p, items, v, steps)
		}
		grp := groupSteps(rs, ss)
		want := NormalizeSteps(grp.d, p.Epsilon)
		got := normalizeGroupSteps(grp, p.Epsilon)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("group %d without pitfalls: %v, eq. 4 gives %v", g, got, want)
		}
		// The first rollout falls into the PITFALL at no step.
		v := append([]schema.Satisfaction(nil), rs[0].Verdicts...)
		v[2] = rewardtest.Sat(3, true, -1)
		ss[0].rubric = SRaRDeltas(p, items, v, len(rs[0].Steps))
		moved := normalizeGroupSteps(groupSteps(rs, ss), p.Epsilon)
		for _, s := range moved[0] {
			for _, w := range want[0] {
				if s.Step == w.Step && s.D > w.D && !rewardtest.Near(s.D, w.D) {
					t.Fatalf("group %d: the rollout that fell into a pitfall at no step got step %d offset %v, above %v without it", g, s.Step, s.D, w.D)
				}
			}
		}
	}
}
