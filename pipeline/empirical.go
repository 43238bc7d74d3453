package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// empirical judges every rollout against the rubric, stores the verdicts on
// the rollouts, and measures each item over the judged rollouts (see
// measureItems). A rollout whose verdict stays unusable (it did not parse
// after its repairs, or the endpoint refused the request as malformed)
// keeps an empty satisfaction list; the problem is not lost for it.
func (e *engine) empirical(ctx context.Context, p source.Problem, rollouts []schema.Rollout, items []schema.Item, u *usage) error {
	es := e.job.Empirical
	client := e.clients[job.StageEmpirical]
	ids := itemIDs(items)
	sat := make([][]schema.Satisfaction, len(rollouts))
	err := fanOut(ctx, len(rollouts), func(ctx context.Context, i int) error {
		r := rollouts[i]
		msgs, err := e.prompts.SatisfyMessages(p.Text, r.Text, r.ExtractedAnswer, items)
		if err != nil {
			return err
		}
		req := judgeRequest(job.StageEmpirical, es.Endpoint, es.Sampling, es.JudgeSeed, e.prompts.Hash(prompts.Satisfy), msgs)
		steps := countSteps(r.Text)
		var verdicts []schema.Satisfaction
		err = e.askParsed(ctx, client, req, es.RepairAttempts, fmt.Sprintf("satisfaction verdicts for rollout %d", r.Index), u, func(reply string) error {
			var err error
			verdicts, err = schema.ParseSatisfaction(reply, ids, steps)
			return err
		})
		if err != nil && unusableVerdict(err) {
			e.log.Debug("empirical: leaving a rollout unjudged", "id", p.ID, "rollout", r.Index, "err", err)
			e.causes.add(job.StageEmpirical, err.Error())
			return nil
		}
		sat[i] = verdicts
		return err
	})
	if err != nil {
		return err
	}
	for i := range rollouts {
		rollouts[i].Satisfaction = sat[i]
	}
	measureItems(rollouts, items, es.Alpha)
	return nil
}

// unusableVerdict reports whether err means this one verdict cannot be had
// (as opposed to the endpoint being down or the run stopping).
func unusableVerdict(err error) bool {
	var pe *llm.ParseError
	return errors.As(err, &pe) || (effectOf(err) == effectProblem && llm.ClassOf(err) == llm.ClassPermanent)
}

// measureItems stores, per item, its satisfaction rate over the judged
// rollouts (those with verdicts), the sign-aware correlation of
// satisfaction with correctness, and the RLCER rule. With fewer than two
// judged rollouts nothing can be measured and the figures stay nil.
func measureItems(rollouts []schema.Rollout, items []schema.Item, alpha float64) {
	var judged []schema.Rollout
	for _, r := range rollouts {
		if len(r.Satisfaction) == len(items) && len(items) > 0 {
			judged = append(judged, r)
		}
	}
	if len(judged) < 2 {
		return
	}
	correct := make([]float64, len(judged))
	for i, r := range judged {
		if r.Correct {
			correct[i] = 1
		}
	}
	for j := range items {
		s := make([]float64, len(judged))
		for i, r := range judged {
			if r.Satisfaction[j].Satisfied {
				s[i] = 1
			}
		}
		m := reward.ItemValidity(s, correct, items[j].Polarity, alpha)
		items[j].SatRate, items[j].Corr, items[j].EmpiricalValid = m.SatRate, m.Corr, m.Valid
	}
}
