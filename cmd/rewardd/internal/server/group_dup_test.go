package server

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// reOpenBlock is a response block's opening line in a judge request's
// JSON body.
var reOpenBlock = regexp.MustCompile(`\[(?:solution|response) [0-9a-f]{16}\]`)

// TestGroupAsksAboutACopyOnce: a response written twice in a group is
// shown to the group request once and both copies get its verdicts (a
// judge shown it twice could grade the copies apart, and would be paid
// for it twice), math and grounded.
func TestGroupAsksAboutACopyOnce(t *testing.T) {
	t.Parallel()
	grounded := rewardtest.GroundedLabels(t)
	for _, tc := range []struct {
		name   string
		labels []schema.Label
		body   map[string]any
	}{
		{"math", nil, map[string]any{"label": labelJSON(t, rewardtest.DemoLabel()), "scheme": "srar",
			"responses": []string{rewardtest.TwoSteps, rewardtest.MarkedResponse, rewardtest.TwoSteps, "The answer is 5. <answer>5</answer>"}}},
		{"grounded", grounded, map[string]any{"problem_id": grounded[0].ID,
			"responses": []string{groundedResponses[0], groundedResponses[1], groundedResponses[0], groundedResponses[2]}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, rec := judgedHarness(t, tc.labels, sim.Config{}, judge.Options{Model: "simulated"}, nil, groupOn)
			var g groupAnswer
			h.post("/v1/score_group", mustJSON(t, tc.body), &g)
			if len(rec.bodies) != 1 || len(reOpenBlock.FindAllString(rec.bodies[0], -1)) != 3 {
				t.Fatalf("%d judge requests; want one showing the 3 distinct responses", len(rec.bodies))
			}
			if !g.Results[2].JudgeOK || fmt.Sprint(g.Results[2]) != fmt.Sprint(g.Results[0]) {
				t.Errorf("the copy: %+v; the first: %+v", g.Results[2], g.Results[0])
			}
		})
	}
}
