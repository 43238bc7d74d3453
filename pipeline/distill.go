package pipeline

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// distill asks for the rubric in the job's style.
func (e *engine) distill(ctx context.Context, p source.Problem, rollouts []schema.Rollout, u *usage) ([]schema.Item, error) {
	msgs, err := e.distillMessages(p, rollouts)
	if err != nil {
		return nil, err
	}
	req := request(job.StageDistill, e.job.Distill.Endpoint, e.job.Distill.Sampling, msgs)
	var items []schema.Item
	parse := func(reply string) error {
		var perr error
		if e.job.Style == schema.StyleFactualProcess {
			items, perr = schema.ParseFactualProcess(reply)
		} else {
			var res schema.SRaRResult
			res, perr = schema.ParseSRaR(reply, schema.SRaROptions{MaxItems: e.job.Distill.MaxItems})
			items = res.Items
		}
		if perr != nil {
			return perr
		}
		return schema.CheckRubric(e.job.Style, items, e.job.Distill.MaxItems)
	}
	if err := e.askParsed(ctx, e.clients[job.StageDistill], req, e.job.Distill.RepairAttempts, "rubric", u, parse); err != nil {
		return nil, err
	}
	return items, nil
}

// distillMessages renders the distillation prompt: contrasting solutions
// (srar), or a reference solution (factual_process: the input's, else a
// correct rollout).
func (e *engine) distillMessages(p source.Problem, rollouts []schema.Rollout) ([]llm.Message, error) {
	maxChars := e.job.Distill.MaxSolutionChars
	if e.job.Style != schema.StyleFactualProcess {
		return e.prompts.DistillSRaRMessages(p.Text, p.Answer, pickSolutions(rollouts, e.job.Distill.MaxSolutions, maxChars), e.job.Distill.MaxItems)
	}
	ref := p.Reference
	for i := 0; ref == "" && i < len(rollouts); i++ {
		if rollouts[i].Correct {
			ref = rollouts[i].Text
		}
	}
	if ref == "" {
		return nil, errors.New("no reference solution: the input has none and no rollout is correct")
	}
	return e.prompts.DistillFactualProcessMessages(p.Text, cut(ref, maxChars), p.Answer)
}

// pickSolutions chooses up to max solutions for the contrastive prompt,
// alternating correct and flawed ones so both sides are shown, and preferring
// flawed solutions that finished over ones cut off by the token limit.
func pickSolutions(rollouts []schema.Rollout, max, maxChars int) []prompts.Solution {
	var correct, flawed, truncated []schema.Rollout
	for _, r := range rollouts {
		switch {
		case r.Correct:
			correct = append(correct, r)
		case r.FinishReason == "length":
			truncated = append(truncated, r)
		default:
			flawed = append(flawed, r)
		}
	}
	flawed = append(flawed, truncated...)
	var picked []schema.Rollout
	for i := 0; len(picked) < max && (i < len(correct) || i < len(flawed)); i++ {
		if i < len(correct) {
			picked = append(picked, correct[i])
		}
		if i < len(flawed) && len(picked) < max {
			picked = append(picked, flawed[i])
		}
	}
	out := make([]prompts.Solution, len(picked))
	for i, r := range picked {
		out[i] = prompts.Solution{Index: i + 1, Correct: r.Correct, Text: cut(r.Text, maxChars)}
	}
	return out
}

// cut shortens s to at most n bytes on a rune boundary, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "\n[... cut ...]"
	end := n - len(mark)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}
