package judge

import (
	"context"
	"fmt"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// lenience tallies, by the half of a group request a response was shown
// in (0: the first half, 1: the second), the verdicts judged alone against
// the response (chances) and those of them the group request turned in its
// favour (turned).
type lenience struct{ chances, turned [2]int64 }

// add counts one verdict of the response shown k-th of n: against it
// alone (against), and turned in its favour in the group (turned).
func (l *lenience) add(k, n int, against, turned bool) {
	half := 0
	if 2*k >= n {
		half = 1
	}
	if against {
		l.chances[half]++
		if turned {
			l.turned[half]++
		}
	}
}

// halves are the 95% intervals of the rates turned in each half.
func (l *lenience) halves(t *testing.T) [2]judgestats.Interval {
	t.Helper()
	var out [2]judgestats.Interval
	for h := range 2 {
		iv, ok := judgestats.Wilson(l.turned[h], l.chances[h], 1.96)
		if !ok {
			t.Fatalf("no verdicts against a response in half %d", h)
		}
		out[h] = iv
	}
	return out
}

// positions are, by response, the position a group request shows it at.
func positions(texts []string) []int {
	at := make([]int, len(texts))
	for k, i := range prompts.GroupOrder(texts) {
		at[i] = k
	}
	return at
}

// TestGroupPositionBiasFound: a measurement of group judging's position
// bias (the verdicts a group request gives in a response's favour where
// the same judge alone gives them against it, by the half of the request
// the response was shown in) finds the simulated judge's planted bias
// (late_lenience: more lenient on later positions) and finds none without
// it, math and grounded: a must-still-find check in both directions.
func TestGroupPositionBiasFound(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	glab := rewardtest.GroundedLabels(t)[0]
	const groups, size = 12, 8
	for _, bias := range []float64{0, 0.5} {
		t.Run(fmt.Sprintf("late_lenience=%v", bias), func(t *testing.T) {
			t.Parallel()
			s := newSimJudged(t, sim.Config{Seed: 11, Judges: map[string]sim.JudgeProfile{"simulated": {LateLenience: bias}}})
			ctx := context.Background()
			var math, grounded lenience
			for g := range groups {
				texts := make([]string, size)
				rs := make([]*reward.Rollout, size)
				for i := range texts {
					texts[i] = fmt.Sprintf("### Step 1: Add, try %d of group %d.\n2+3 = %d.\n### Step 2: Check.\nLog first, then replay.\n<answer>%d</answer>", i, g, 4+i%3, 4+i%3)
					r := reward.Analyze(texts[i], lab.GroundTruth)
					rs[i] = &r
				}
				at := positions(texts)
				together, errs := s.judge.GroupVerdicts(ctx, lab.Question, lab.Rubric, rs)
				scores, serrs := s.judge.GroundedGroupScores(ctx, &glab, texts)
				for i := range texts {
					if errs[i] != nil || serrs[i] != nil {
						t.Fatalf("group %d response %d: %v, %v", g, i, errs[i], serrs[i])
					}
					alone, err := s.judge.Verdicts(ctx, lab.Question, lab.Rubric, rs[i])
					if err != nil {
						t.Fatal(err)
					}
					for k, it := range lab.Rubric {
						against := alone[k].Satisfied == (it.Type == schema.TypePitfall)
						math.add(at[i], size, against, together[i][k].Satisfied != alone[k].Satisfied)
					}
					one, err := s.judge.GroundedScores(ctx, &glab, texts[i])
					if err != nil {
						t.Fatal(err)
					}
					for k, c := range glab.Grounded.Criteria {
						grounded.add(at[i], size, one.Scores[k] < c.Weight, scores[i].Scores[k] > one.Scores[k])
					}
				}
			}
			for name, l := range map[string]*lenience{"math": &math, "grounded": &grounded} {
				h := l.halves(t)
				t.Logf("%s: turned in the response's favour %d/%d in the first half, %d/%d in the second", name, l.turned[0], l.chances[0], l.turned[1], l.chances[1])
				found := h[1].Low > h[0].High
				if bias > 0 && !found {
					t.Errorf("%s, planted bias %v: the second half's rate [%.2f, %.2f] is not above the first's [%.2f, %.2f]", name, bias, h[1].Low, h[1].High, h[0].Low, h[0].High)
				}
				if bias == 0 && (l.turned[0] > 0 || l.turned[1] > 0) {
					t.Errorf("%s, no bias: %d and %d verdicts turned by the group request", name, l.turned[0], l.turned[1])
				}
			}
		})
	}
}
