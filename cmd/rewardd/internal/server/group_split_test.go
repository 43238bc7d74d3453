package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroupSplitToFitTheJudge: a group whose responses do not fit in one
// judge request within the response budget (--judge-max-response-tokens)
// is asked in parts that do, each part one group request, instead of one
// request over the judge's context (a 400 paid before judging each
// response alone); math and grounded.
func TestGroupSplitToFitTheJudge(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("We restate the reasoning once more, slowly. ", 12) // about 200 estimated tokens a response
	mathLab := rewardtest.DemoLabel()
	grounded := rewardtest.GroundedLabels(t)
	for _, tc := range []struct {
		name       string
		labels     []schema.Label
		body       func(responses []string) string
		group      sim.Kind
		wantGroups int
	}{
		{"math", []schema.Label{mathLab}, func(rs []string) string {
			return mustJSON(t, map[string]any{"problem_id": mathLab.ID, "scheme": "srar", "responses": rs})
		}, sim.KindSatisfyGroup, 3},
		{"grounded", grounded, func(rs []string) string {
			return mustJSON(t, map[string]any{"problem_id": grounded[0].ID, "responses": rs})
		}, sim.KindScoreGroundedGroup, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var responses []string
			for k := range 6 {
				responses = append(responses, fmt.Sprintf("### Step 1: Add.\n%s\n2+3 = 5, log first (%d).\n<answer>5</answer>", pad, k))
			}
			// Budget 512 estimated tokens: two responses of about 220 fit
			// together, three do not; the judge's context (1,400 of the
			// simulated endpoint's tokens) holds a request of two beside
			// the shared part, not one of six (without the budget: one
			// request of six, refused, then six single ones).
			h, _ := judgedHarness(t, tc.labels, sim.Config{ContextTokens: 1400}, judge.Options{Model: "simulated", MaxResponseTokens: 512}, nil, groupOn)
			var g groupAnswer
			h.post("/v1/score_group", tc.body(responses), &g)
			for i, r := range g.Results {
				if !r.JudgeOK {
					t.Errorf("response %d: judge_ok false (%s)", i, r.JudgeError)
				}
			}
			refused := 0
			for _, e := range h.simulator.Log() {
				if e.Status != http.StatusOK {
					refused++
				}
			}
			if k := kinds(h); k[tc.group] != tc.wantGroups || len(k) != 1 || refused > 0 {
				t.Errorf("judge requests by kind %v, %d refused; want %d group requests of 2 responses each, none refused", k, refused, tc.wantGroups)
			}
		})
	}
}
