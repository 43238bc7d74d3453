package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestUnsharedStepFlawCostsAsMuch: under srar a pitfall fallen into at a
// step no group-mate has (an extra "### Step 3", or text before "### Step
// 1", which the judge calls step 0) costs at least what it costs at a
// shared step. Over HTTP, a response that writes the same flaw in its
// shared step 2 and one that writes it in an extra step or before its
// first are scored in the same group of honest responses: the scalar
// rewards are equal, and the unshared flaw's response gets no higher
// advantage on a step both have, on the step that holds its flaw than the
// shared flaw's step, or in the mean over its steps.
func TestUnsharedStepFlawCostsAsMuch(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel() // 1, 2 SUGGEST (0.4 each), 3 PITFALL (-1), 4 BONUS (1), 5 ANSWER (0)
	h := newHarness(t, []schema.Label{lab})
	step := func(n, ids string) string { return "### Step " + n + ": Work.\n2+3 = 5. " + ids + "\n" }
	honest := []string{
		step("1", sim.SatisfiedMarker(1)) + step("2", sim.SatisfiedMarker(2, 5)) + "<answer>5</answer>",
		step("1", sim.SatisfiedMarker(1, 2)) + step("2", sim.SatisfiedMarker(5)) + "<answer>5</answer>",
		step("1", sim.SatisfiedMarker(1)) + step("2", sim.SatisfiedMarker(5)) + "<answer>5</answer>",
	}
	shared := step("1", sim.SatisfiedMarker(1)) + step("2", sim.SatisfiedMarker(2, 3, 5)) + "<answer>5</answer>"
	unshared := map[string]string{
		"an extra step 3":           step("1", sim.SatisfiedMarker(1)) + step("2", sim.SatisfiedMarker(2, 5)) + step("3", sim.SatisfiedMarker(3)) + "<answer>5</answer>",
		"text before step 1":        "First a remark. " + sim.SatisfiedMarker(3) + "\n" + step("1", sim.SatisfiedMarker(1)) + step("2", sim.SatisfiedMarker(2, 5)) + "<answer>5</answer>",
		"an extra step 3, two more": step("1", sim.SatisfiedMarker(1)) + step("2", sim.SatisfiedMarker(2, 5)) + step("3", sim.SatisfiedMarker(3)) + step("4", "") + "<answer>5</answer>",
	}
	score := func(x string) (reward.Result, reward.Advantage) {
		var g reward.Group
		h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": lab.ID, "scheme": "srar", "responses": append([]string{x}, honest...)}), &g)
		if !g.Results[0].JudgeOK {
			t.Fatalf("not judged: %s", g.Results[0].JudgeError)
		}
		return g.Results[0], g.Advantages[0]
	}
	mean := func(a reward.Advantage) float64 {
		s := 0.0
		for _, st := range a.Steps {
			s += st.Advantage
		}
		return s / float64(len(a.Steps))
	}
	sr, sa := score(shared)
	for name, x := range unshared {
		ur, ua := score(x)
		if !rewardtest.Near(ur.Reward, sr.Reward) {
			t.Errorf("%s: reward %v, the shared flaw's %v; the test wants them equal", name, ur.Reward, sr.Reward)
		}
		var bad []string
		for k, st := range ua.Steps {
			// A shared step: its advantage with the flaw at step 2; the
			// step holding the flaw: the flawed step 2's. An extra step
			// without items is held only through the mean.
			ceiling := sa.Steps[min(k, len(sa.Steps)-1)].Advantage
			if k >= len(sa.Steps) && !strings.Contains(x[strings.Index(x, "### Step "+fmt.Sprint(k+1)):], sim.SatisfiedMarker(3)) {
				continue
			}
			if st.Advantage > ceiling && !rewardtest.Near(st.Advantage, ceiling) {
				bad = append(bad, fmt.Sprintf("step %d %.3f > %.3f", st.Step, st.Advantage, ceiling))
			}
		}
		if m, ms := mean(ua), mean(sa); m > ms && !rewardtest.Near(m, ms) || len(bad) > 0 {
			t.Errorf("%s: step advantages %v (mean %.3f); the same flaw at shared step 2: %v (mean %.3f); above it: %v", name, ua.Steps, m, sa.Steps, ms, bad)
		}
	}
}
