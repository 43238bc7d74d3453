package judge

import (
	"context"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// GroundedScores scores response against the grounded question of lab (its
// passage as the answer key, its criteria) with the score_grounded template
// (seed 001 appendix D), at the judge's sampling (temperature 0 unless set), parsed by
// schema.ParseGroundedScores. An unusable reply is a judge failure, paid
// the conservative zero, as seed 001 prescribes (its structured-parsing
// safeguard: an invalid output gets zero, it is not repaired);
// Options.GroundedRepairs opts into showing it back to the judge with
// the parser's error that many times first. The parsed scores are cached in memory
// like the satisfaction verdicts, keyed by the judge model, the templates,
// the question, the passage, every criterion field the prompt shows and the
// response.
func (j *Judge) GroundedScores(ctx context.Context, lab *schema.Label, response string) (schema.GroundedScores, error) {
	if lab.Grounded == nil {
		return schema.GroundedScores{}, fmt.Errorf("judge: label %s is not a grounded question", lab.ID)
	}
	if j.members != nil {
		return j.panelScores(ctx, lab, response)
	}
	key := responseKey(j.groundedKey(lab), response)
	return j.grounded.do(ctx, key, &j.memHits, func() (schema.GroundedScores, error) {
		var g schema.GroundedScores
		err := j.guarded(ctx, func() error {
			return j.slot(ctx, func() (err error) {
				g, err = j.askGrounded(ctx, lab, response)
				return err
			})
		})
		return g, err
	})
}

func (j *Judge) askGrounded(ctx context.Context, lab *schema.Label, response string) (schema.GroundedScores, error) {
	criteria := lab.Grounded.Criteria
	// The passage is cut to Options.PassageTokens, as seed 001
	// truncates the grounding to fit the judge's context.
	passage, cut := prompts.FitPassage(lab.Grounded.Passage, j.opt.PassageTokens)
	if cut {
		j.passagesCut.Add(1)
	}
	msgs, shown, err := j.prompts.ScoreGroundedView(j.view(), passage, lab.Question, response, criteria)
	if err != nil {
		return schema.GroundedScores{}, err
	}
	if shown.Cut {
		// Scores only credit what the judge saw: the hidden middle of a
		// response can only have earned more.
		j.responsesCut.Add(1)
	}
	req := j.request(GroundedJudgeStage, j.opt.Layout.Of(prompts.ScoreGrounded), msgs)
	var g schema.GroundedScores
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What:    "grounded criterion scores",
		Repairs: j.opt.GroundedRepairs,
		Parse: func(reply string) error {
			var err error
			g, err = schema.ParseGroundedScoresOf(reply, response, criteria)
			return err
		},
		Repair: j.prompts.RepairMessages,
		OnResponse: func(resp *llm.Response) {
			if resp.Cached {
				j.diskHits.Add(1)
			}
			j.warm.note(resp, func() uint64 { return sum64(j.groundedKey(lab)) })
		},
	})
	return g, err
}

// groundedKey is the key's hash before the response: the same for every
// response to one grounded question.
func (j *Judge) groundedKey(lab *schema.Label) xxhash.Digest {
	return j.groundedKeyOf(j.groundedSalt, lab)
}

// groundedKeyOf is groundedKey under salt (the single or the group
// template's).
func (j *Judge) groundedKeyOf(salt string, lab *schema.Label) xxhash.Digest {
	var d xxhash.Digest
	d.Reset()
	hashString(&d, salt)
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

// GroundedJudgeStage is the accounting stage of the grounded judge's
// requests.
const GroundedJudgeStage = "score_grounded"
