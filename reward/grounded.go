package reward

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/rubricforge/rubricforge/schema"
)

// CriterionScore is the grounded judge's score of one criterion.
type CriterionScore struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Score  float64 `json:"score"` // from 0 to Weight
}

// ScoreGrounded is the result of one response to the grounded question of
// lab, given the judge's scores or its error: reward = score =
// clip(Σ s_j / W, 0, 1) (seed 001 eq. 2, NormalizedReward) with component
// rubric; on a judge failure 0 (the paper's conservative zero) with
// judge_ok false. Metrics, the keys of the grounded scheme: n_items (the
// criteria), satisfied (criteria given their full weight), n_steps 0 and
// pass_rate (the reward). Correct is false: a grounded question has no
// ground truth to verify against.
func ScoreGrounded(lab *schema.Label, g schema.GroundedScores, judgeErr error) Result {
	res := Result{ProblemID: lab.ID, Scheme: schema.SchemeGrounded, JudgeOK: judgeErr == nil,
		Items: []ItemVerdict{}, Steps: []StepResult{}, Empty: errors.Is(judgeErr, ErrEmptyResponse)}
	criteria := lab.Grounded.Criteria
	var awarded float64
	full := 0
	switch {
	case res.Empty:
		res.JudgeError = judgeErr.Error()
	case judgeErr != nil:
		res.JudgeError = "grounded judge: " + judgeErr.Error()
	default:
		res.Criteria = make([]CriterionScore, len(criteria))
		for k, c := range criteria {
			s := g.Scores[k]
			awarded += s
			if s >= c.Weight {
				full++
			}
			res.Criteria[k] = CriterionScore{ID: c.ID, Name: c.Name, Weight: c.Weight, Score: s}
		}
	}
	res.Reward = NormalizedReward(awarded, schema.TotalWeight(criteria))
	res.Score = res.Reward
	res.Components = Values{"rubric": res.Reward}
	res.Metrics = Values{"n_items": float64(len(criteria)), "satisfied": float64(full), "n_steps": 0, "pass_rate": res.Reward}
	return finiteOrError(res)
}

// ScoreGroundedGroup scores every response to one grounded question (scores
// and errs in response order) and gives each the leave-one-out advantage of
// seed 001 (eq. 4-6, LOOAdvantages) of its reward; a response whose judge
// failed enters the group with its reward 0.
func ScoreGroundedGroup(p Params, lab *schema.Label, scores []schema.GroundedScores, errs []error) Group {
	g := Group{Results: make([]Result, len(scores)), Advantages: make([]Advantage, len(scores)), Validity: []ItemGroupValidity{}}
	rewards := make([]float64, len(scores))
	for i := range scores {
		g.Results[i] = ScoreGrounded(lab, scores[i], errs[i])
		rewards[i] = g.Results[i].Reward
	}
	for i, a := range LOOAdvantages(rewards, p.Epsilon) {
		g.Advantages[i] = Advantage{Outcome: a, Total: a, Steps: []StepAdvantage{}}
	}
	return g
}

// CheckGroundedScheme checks the scheme asked for a grounded question: none (the
// question's own) or grounded; any other is an error for the item.
func CheckGroundedScheme(asked string, lab *schema.Label) error {
	if asked == "" || asked == schema.SchemeGrounded {
		return nil
	}
	return fmt.Errorf("%s is a grounded question, scored only under scheme %s; scheme %s needs a math rubric",
		strconv.Quote(lab.ID), schema.SchemeGrounded, strconv.Quote(asked))
}
