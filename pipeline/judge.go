package pipeline

import (
	"context"
	"fmt"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// judge asks the validity judge (every judge of judge.panel) about every
// item and stores the verdicts, the panel's on the items and each judge's
// in the record's panel; with drop_invalid it removes the items found
// invalid.
func (e *engine) judge(ctx context.Context, w *unit) error {
	judges := e.judges[job.StageJudge]
	t := newVerdictTable(len(w.items), len(judges))
	var err error
	if e.job.Judge.Mode == "item" {
		err = e.judgeEachItem(ctx, w, judges, t)
	} else {
		err = fanOut(ctx, len(judges), func(ctx context.Context, j int) error {
			return e.judgeBatch(ctx, w, judges[j], j, t)
		})
	}
	if err == nil {
		err = t.unjudged()
	}
	if err != nil {
		return err
	}
	for i := range w.items {
		valid, reason := panelVerdict(t.at[i])
		w.items[i].Valid, w.items[i].ValidReason = &valid, &reason
		if e.hasPanel(job.StageJudge) {
			w.panel.Validity = append(w.panel.Validity, schema.ItemVerdicts{ItemID: w.items[i].ID, Verdicts: t.at[i]})
		}
	}
	if e.job.Judge.DropInvalid {
		return e.dropInvalid(w)
	}
	return nil
}

// dropInvalid removes the items the judge (the panel) found invalid,
// numbering the kept ones 1..n again, their panel verdicts with them.
func (e *engine) dropInvalid(w *unit) error {
	items := w.items
	kept := items[:0:0]
	var verdicts []schema.ItemVerdicts
	for i, it := range items {
		if it.Valid == nil || *it.Valid {
			it.ID = int32(len(kept) + 1)
			kept = append(kept, it)
			if w.panel != nil && i < len(w.panel.Validity) {
				iv := w.panel.Validity[i]
				iv.ItemID = it.ID
				verdicts = append(verdicts, iv)
			}
		}
	}
	if w.panel != nil && len(w.panel.Validity) > 0 {
		w.panel.Validity = verdicts
	}
	if err := schema.CheckRubric(e.job.Style, kept, e.job.Distill.MaxItems); err != nil {
		return fmt.Errorf("rubric no longer holds after dropping %d invalid items: %w", len(items)-len(kept), err)
	}
	w.items = kept
	return nil
}

// judgeEachItem sends one judge request per item and judge.
func (e *engine) judgeEachItem(ctx context.Context, w *unit, judges []judgeAt, t verdictTable) error {
	items, n := w.items, len(w.items)
	return fanOut(ctx, n*len(judges), func(ctx context.Context, k int) error {
		i, j := k%n, k/n
		jd := judges[j]
		msgs, err := jd.prompts.JudgeItemMessagesIn(e.job.JudgeLayout(), w.p.Text, w.p.Answer, items[i])
		if err != nil {
			return err
		}
		return e.askItemVerdict(ctx, w, jd, msgs, fmt.Sprintf("validity verdict for item %d", items[i].ID), t, i, j)
	})
}

// askItemVerdict asks judge jd (the j-th) for its validity verdict on one
// item or criterion (the i-th) with msgs and puts it in t: a panel judge
// that gives none gets a failed verdict there instead.
func (e *engine) askItemVerdict(ctx context.Context, w *unit, jd judgeAt, msgs []llm.Message, what string, t verdictTable, i, j int) error {
	req := jd.request(msgs)
	req.JSON = e.job.JSONObject.Judge
	err := e.askJudge(ctx, jd, req, e.job.Judge.RepairAttempts, what, &w.u, func(reply string) error {
		v, err := schema.ParseValidity(reply)
		if err == nil {
			t.at[i][j] = schema.JudgeVerdict{Judge: jd.name, Valid: &v.Valid, Reason: v.Reason}
		}
		return err
	})
	if e.absorbs(job.StageJudge, err) {
		t.at[i][j], t.errs[i][j] = failedVerdict(jd.name, err), err
		return nil
	}
	return err
}

// judgeBatch sends judge jd (the j-th) one request for all items of the
// problem, shown in the judge's order (see engine.order); the verdicts
// are mapped back by item id.
func (e *engine) judgeBatch(ctx context.Context, w *unit, jd judgeAt, j int, t verdictTable) error {
	items := w.items
	msgs, err := jd.prompts.JudgeBatchMessagesIn(e.job.JudgeLayout(), w.p.Text, w.p.Answer, shown(items, e.order(w.p.ID, jd, 0, len(items))))
	if err != nil {
		return err
	}
	ids := itemIDs(items)
	req := jd.request(msgs)
	req.JSON = false // a JSON array is not a json_object response
	err = e.askJudge(ctx, jd, req, e.job.Judge.RepairAttempts, "validity verdicts", &w.u, func(reply string) error {
		vs, err := schema.ParseValidityBatch(reply, ids)
		if err != nil {
			return err
		}
		for i := range vs {
			t.at[i][j] = schema.JudgeVerdict{Judge: jd.name, Valid: &vs[i].Valid, Reason: vs[i].Reason}
		}
		return nil
	})
	if e.absorbs(job.StageJudge, err) {
		for i := range items {
			t.at[i][j], t.errs[i][j] = failedVerdict(jd.name, err), err
		}
		return nil
	}
	return err
}

func itemIDs(items []schema.Item) []int32 {
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}
