package reward

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// GroundedJudgeStage is the accounting stage of the grounded judge's
// requests.
const GroundedJudgeStage = "score_grounded"

// CriterionScore is the grounded judge's score of one criterion.
type CriterionScore struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	Score  float64 `json:"score"` // from 0 to Weight
}

// GroundedScores scores response against the grounded question of lab (its
// passage as the answer key, its criteria) with the score_grounded template
// (seed 001 appendix D), at temperature 0, parsed by
// schema.ParseGroundedScores. An unusable reply is a judge failure, paid
// the conservative zero, as seed 001 prescribes (its structured-parsing
// safeguard: an invalid output gets zero, it is not repaired);
// JudgeOptions.GroundedRepairs opts into showing it back to the judge with
// the parser's error that many times first. The parsed scores are cached in memory
// like the satisfaction verdicts, keyed by the judge model, the templates,
// the question, the passage, every criterion field the prompt shows and the
// response.
func (j *Judge) GroundedScores(ctx context.Context, lab *schema.Label, response string) (schema.GroundedScores, error) {
	if lab.Grounded == nil {
		return schema.GroundedScores{}, fmt.Errorf("reward: label %s is not a grounded question", lab.ID)
	}
	key := responseKey(j.groundedKey(lab), response)
	return j.grounded.do(ctx, key, &j.memHits, func() (schema.GroundedScores, error) {
		var g schema.GroundedScores
		err := j.slot(ctx, func() (err error) {
			g, err = j.askGrounded(ctx, lab, response)
			return err
		})
		return g, err
	})
}

func (j *Judge) askGrounded(ctx context.Context, lab *schema.Label, response string) (schema.GroundedScores, error) {
	criteria := lab.Grounded.Criteria
	// The passage is cut to JudgeOptions.PassageTokens, as seed 001
	// truncates the grounding to fit the judge's context.
	passage, cut := prompts.FitPassage(lab.Grounded.Passage, j.opt.PassageTokens)
	if cut {
		j.passagesCut.Add(1)
	}
	msgs, err := j.prompts.ScoreGroundedMessages(passage, lab.Question, response, criteria)
	if err != nil {
		return schema.GroundedScores{}, err
	}
	zero := 0.0
	req := llm.Request{Stage: GroundedJudgeStage, Model: j.opt.Model, Messages: msgs, Temperature: &zero, MaxTokens: j.opt.MaxTokens}
	var g schema.GroundedScores
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What:    "grounded criterion scores",
		Repairs: j.opt.GroundedRepairs,
		Parse: func(reply string) error {
			var err error
			g, err = schema.ParseGroundedScores(reply, criteria)
			return err
		},
		Repair: j.prompts.RepairMessages,
		OnResponse: func(resp *llm.Response) {
			if resp.Cached {
				j.diskHits.Add(1)
			}
		},
	})
	return g, err
}

// groundedKey is the key's hash before the response: the same for every
// response to one grounded question.
func (j *Judge) groundedKey(lab *schema.Label) xxhash.Digest {
	var d xxhash.Digest
	d.Reset()
	hashString(&d, j.groundedSalt)
	hashString(&d, lab.Question)
	hashString(&d, lab.Grounded.Passage)
	for _, c := range lab.Grounded.Criteria {
		hashString(&d, c.ID)
		hashString(&d, c.Name)
		hashInt(&d, math.Float64bits(c.Weight))
		hashString(&d, c.Description)
		hashStrings(&d, c.RequiredElements)
		hashString(&d, c.ScoringGuide)
		hashStrings(&d, c.ExpectedKeywords)
		hashString(&d, c.VerificationMethod)
	}
	return d
}

func hashStrings(d *xxhash.Digest, ss []string) {
	hashInt(d, uint64(len(ss)))
	for _, s := range ss {
		hashString(d, s)
	}
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
		Items: []ItemVerdict{}, Steps: []StepResult{}}
	criteria := lab.Grounded.Criteria
	var awarded float64
	full := 0
	if judgeErr != nil {
		res.JudgeError = "grounded judge: " + judgeErr.Error()
	} else {
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

// groundedScheme checks the scheme asked for a grounded question: none (the
// question's own) or grounded; any other is an error for the item.
func groundedScheme(asked string, lab *schema.Label) error {
	if asked == "" || asked == schema.SchemeGrounded {
		return nil
	}
	return fmt.Errorf("%s is a grounded question, scored only under scheme %s; scheme %s needs a math rubric",
		strconv.Quote(lab.ID), schema.SchemeGrounded, strconv.Quote(asked))
}
