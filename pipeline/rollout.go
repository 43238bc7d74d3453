package pipeline

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/verify"
)

// rollouts samples N solutions and verifies each against the ground truth.
func (e *engine) rollouts(ctx context.Context, p source.Problem, u *usage) ([]schema.Rollout, error) {
	msgs, err := e.prompts.RolloutMessages(p.Text)
	if err != nil {
		return nil, err
	}
	n, per := e.job.Rollout.N, e.job.Rollout.PerRequest
	out := make([]schema.Rollout, n)
	requests := (n + per - 1) / per
	client := e.clients[job.StageRollout]
	err = fanOut(ctx, requests, func(ctx context.Context, i int) error {
		first := i * per
		k := min(per, n-first)
		req := request(job.StageRollout, e.job.Rollout.Endpoint, e.job.Rollout.Sampling, msgs)
		req.N = k
		req.SampleIndex = first
		seed := e.job.Rollout.Seed + int64(first)
		req.Seed = &seed
		resp, err := client.Chat(ctx, req)
		if err != nil {
			return fmt.Errorf("samples %d-%d: %w", first, first+k-1, err)
		}
		u.add(resp)
		var tokens *int32
		if k == 1 { // usage is per request, so per sample only when a request has one
			tokens = ptr(int32(min(resp.CompletionTokens, math.MaxInt32)))
		}
		for j, c := range resp.Choices {
			out[first+j] = e.verifyRollout(int32(first+j), c, p.Answer, tokens)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// verifyRollout extracts and checks a rollout's final answer. The verifier is
// told the finish reason: a rollout cut off by the token limit has no answer
// and is never a clean correct one, and one the model ended is read as it is.
func (e *engine) verifyRollout(index int32, c llm.Choice, gold string, tokens *int32) schema.Rollout {
	r := schema.Rollout{Index: index, Text: c.Content, FinishReason: c.FinishReason, CompletionTokens: tokens}
	ans, ok := e.extract(c.Content, c.FinishReason)
	if ok {
		r.ExtractedAnswer = ans
	}
	r.FormatOK = schema.CountSteps(c.Content) > 0 && strings.Contains(c.Content, "<answer>") && strings.Contains(c.Content, "</answer>")
	r.Correct = ok && c.FinishReason == "stop" && verify.Equal(gold, ans)
	return r
}

// countSteps counts the "### Step N:" headers of a solution, by the rule
// rewardd's step spans and the satisfy prompt's step tags use.
func countSteps(text string) int { return schema.CountSteps(text) }
