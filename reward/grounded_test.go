package reward

import (
	"errors"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

func TestNormalizedReward(t *testing.T) {
	for _, tc := range []struct{ awarded, total, want float64 }{
		{5, 8, 0.625}, {8, 8, 1}, {9, 8, 1}, {-1, 8, 0}, {0, 8, 0}, {1, 0, 0}, {1, -2, 0},
	} {
		if got := NormalizedReward(tc.awarded, tc.total); got != tc.want {
			t.Errorf("NormalizedReward(%v, %v) = %v, want %v", tc.awarded, tc.total, got, tc.want)
		}
	}
}

func TestScoreGroundedResult(t *testing.T) {
	lab := &rewardtest.GroundedLabels(t)[0]
	res := ScoreGrounded(lab, schema.GroundedScores{Scores: []float64{4, 1, 0}, Total: 5, MaxTotal: 8}, nil)
	if res.Reward != 0.625 || res.Score != 0.625 || !res.JudgeOK || res.Components["rubric"] != 0.625 || res.Scheme != schema.SchemeGrounded {
		t.Errorf("result %+v, want reward and score 5/8 under grounded", res)
	}
	if res.ProblemID != schema.QuestionID("0123456789abcdef", 0) || len(res.Criteria) != 3 || res.Criteria[0] != (CriterionScore{"order", "Log first", 4, 4}) {
		t.Errorf("problem %q criteria %+v", res.ProblemID, res.Criteria)
	}
	if res.Metrics["satisfied"] != 1 || res.Metrics["n_items"] != 3 || res.Metrics["pass_rate"] != 0.625 {
		t.Errorf("metrics %v", res.Metrics)
	}
	failed := ScoreGrounded(lab, schema.GroundedScores{}, errors.New("down"))
	if failed.Reward != 0 || failed.JudgeOK || !strings.Contains(failed.JudgeError, "down") || failed.Criteria != nil {
		t.Errorf("judge failure: %+v, want reward 0 and judge_ok false", failed)
	}
	shape := ErrorResult("", "x", schema.SchemeGrounded, "e")
	for k := range shape.Metrics {
		if _, ok := res.Metrics[k]; !ok {
			t.Errorf("metric %q of the grounded scheme is missing from a grounded question's result", k)
		}
	}
}

func TestScoreGroundedGroupLOO(t *testing.T) {
	lab := &rewardtest.GroundedLabels(t)[0]
	p := DefaultParams()
	scores := []schema.GroundedScores{{Scores: []float64{4, 2, 2}}, {Scores: []float64{2, 0, 0}}, {}, {Scores: []float64{0, 0, 0}}}
	errs := []error{nil, nil, errors.New("unusable"), nil}
	g := ScoreGroundedGroup(p, lab, scores, errs)
	rewards := []float64{1, 0.25, 0, 0}
	want := LOOAdvantages(rewards, p.Epsilon)
	for i := range rewards {
		if !rewardtest.Near(g.Results[i].Reward, rewards[i]) || !rewardtest.Near(g.Advantages[i].Outcome, want[i]) || g.Advantages[i].Total != g.Advantages[i].Outcome {
			t.Errorf("rollout %d: reward %v advantage %+v, want %v and %v", i, g.Results[i].Reward, g.Advantages[i], rewards[i], want[i])
		}
	}
	if g.Advantages[0].Outcome <= 0 || g.Advantages[2].Outcome >= 0 {
		t.Errorf("advantages %+v: the best answer must gain, a failed judgment lose", g.Advantages)
	}
}
