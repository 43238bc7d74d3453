package pipeline

import (
	"context"
	"fmt"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/prompts"

	"github.com/rubricforge/rubricforge/schema"
)

// judge asks the validity judge about every item and stores the verdicts;
// with drop_invalid it removes the items found invalid.
func (e *engine) judge(ctx context.Context, p source.Problem, items []schema.Item, u *usage) ([]schema.Item, error) {
	var err error
	if e.job.Judge.Mode == "item" {
		err = e.judgeEachItem(ctx, p, items, u)
	} else {
		err = e.judgeBatch(ctx, p, items, u)
	}
	if err != nil {
		return nil, err
	}
	if !e.job.Judge.DropInvalid {
		return items, nil
	}
	kept := items[:0:0]
	for _, it := range items {
		if it.Valid == nil || *it.Valid {
			it.ID = int32(len(kept) + 1)
			kept = append(kept, it)
		}
	}
	if err := schema.CheckRubric(e.job.Style, kept, e.job.Distill.MaxItems); err != nil {
		return nil, fmt.Errorf("rubric no longer holds after dropping %d invalid items: %w", len(items)-len(kept), err)
	}
	return kept, nil
}

// judgeEachItem sends one judge request per item.
func (e *engine) judgeEachItem(ctx context.Context, p source.Problem, items []schema.Item, u *usage) error {
	js := e.job.Judge
	return fanOut(ctx, len(items), func(ctx context.Context, i int) error {
		msgs, err := e.prompts.JudgeItemMessages(p.Text, p.Answer, items[i])
		if err != nil {
			return err
		}
		req := judgeRequest(job.StageJudge, js.Endpoint, js.Sampling, js.JudgeSeed, e.prompts.Hash(prompts.JudgeItem), msgs)
		req.JSON = e.job.JSONObject.Judge
		return e.askParsed(ctx, e.clients[job.StageJudge], req, js.RepairAttempts, fmt.Sprintf("validity verdict for item %d", items[i].ID), u, func(reply string) error {
			v, err := schema.ParseValidity(reply)
			if err == nil {
				items[i].Valid, items[i].ValidReason = &v.Valid, &v.Reason
			}
			return err
		})
	})
}

// judgeBatch sends one judge request for all items of a problem.
func (e *engine) judgeBatch(ctx context.Context, p source.Problem, items []schema.Item, u *usage) error {
	js := e.job.Judge
	msgs, err := e.prompts.JudgeBatchMessages(p.Text, p.Answer, items)
	if err != nil {
		return err
	}
	ids := itemIDs(items)
	req := judgeRequest(job.StageJudge, js.Endpoint, js.Sampling, js.JudgeSeed, e.prompts.Hash(prompts.JudgeBatch), msgs)
	req.JSON = false // a JSON array is not a json_object response
	return e.askParsed(ctx, e.clients[job.StageJudge], req, js.RepairAttempts, "validity verdicts", u, func(reply string) error {
		vs, err := schema.ParseValidityBatch(reply, ids)
		if err != nil {
			return err
		}
		for i := range vs {
			items[i].Valid, items[i].ValidReason = &vs[i].Valid, &vs[i].Reason
		}
		return nil
	})
}

func itemIDs(items []schema.Item) []int32 {
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}
