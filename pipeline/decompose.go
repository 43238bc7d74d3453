package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// StageDecompose is the stage of distill refine --decompose that asks the
// distiller for finer items in place of a record's saturated ones. Its
// requests go to the distill endpoint, as distill requests.
const StageDecompose = "decompose"

// Seed is what decomposing one record starts from: its saturated items and
// its rollouts (with their correctness; their verdicts are not sent). The
// distiller is shown only rollouts whose verdicts say they meet an item, so
// a rollout without verdicts is never shown (refine keeps the half its
// figures are measured on out that way); every rollout is judged on the
// finer items.
type Seed struct {
	Saturated []schema.Item
	Rollouts  []schema.Rollout
}

// Seeds gives the seed of a unit by its id (the record's). A run whose
// Options carry Seeds runs the decompose stages instead of its style's:
// decompose, judge, empirical; its input holds one row per record to
// decompose, with the record's id, problem and answer.
type Seeds interface {
	Seed(id string) (Seed, bool)
}

// decomposeStages turn a record with saturated items into a record whose
// rubric is the finer items (validity-judged) and whose rollouts carry the
// satisfaction verdicts on them.
var decomposeStages = []stage{
	{name: StageDecompose, run: func(e *engine, ctx context.Context, w *unit) (err error) {
		w.rollouts, w.items, err = e.decompose(ctx, w)
		return err
	}},
	mathStages[3], // judge
	mathStages[4], // empirical
}

// DecomposeStageNames are the stages a decomposition of jb runs that send
// requests, in order (the judge and empirical stages when jb has them on).
func DecomposeStageNames(jb *job.Job) []string {
	var out []string
	for _, st := range decomposeStages {
		if st.on == nil || st.on(jb) {
			out = append(out, st.name)
		}
	}
	return out
}

// stages is the stage list the engine runs for its job.
func (e *engine) stages() []stage {
	if e.seeds != nil {
		return decomposeStages
	}
	return stagesOf(e.job.Style)
}

// decompose asks, for each saturated item of the unit's record, for 2-3
// finer items, showing the solutions that meet it; the finer items of all
// of them, renumbered 1..n, are the unit's rubric. The record's rollouts
// come back without their old verdicts, for the empirical stage.
func (e *engine) decompose(ctx context.Context, w *unit) ([]schema.Rollout, []schema.Item, error) {
	seed, ok := e.seeds.Seed(w.p.ID)
	if !ok {
		return nil, nil, fmt.Errorf("no record %s to decompose (the work directory's input does not match the source)", w.p.ID)
	}
	ds := e.job.Distill
	parts := make([][]schema.Item, len(seed.Saturated))
	err := fanOut(ctx, len(seed.Saturated), func(ctx context.Context, k int) error {
		it := seed.Saturated[k]
		msgs, err := e.prompts.DecomposeMessages(w.p.Text, w.p.Answer, it, satisfying(seed.Rollouts, it, ds.MaxSolutions, ds.MaxSolutionChars))
		if err != nil {
			return err
		}
		req := request(job.StageDistill, ds.Endpoint, ds.Sampling, msgs)
		return e.askParsed(ctx, e.clients[job.StageDistill], req, ds.RepairAttempts, fmt.Sprintf("finer items for item %d", it.ID), &w.u, func(reply string) error {
			items, err := schema.ParseDecomposed(reply, it.Type)
			for i := range items {
				items[i].Weight = it.Weight
			}
			parts[k] = items
			return err
		})
	})
	if err != nil {
		return nil, nil, err
	}
	var items []schema.Item
	for _, p := range parts {
		for _, it := range p {
			it.ID = int32(len(items) + 1)
			items = append(items, it)
		}
	}
	rollouts := slices.Clone(seed.Rollouts)
	for i := range rollouts {
		rollouts[i].Satisfaction = nil
	}
	return rollouts, items, nil
}

// satisfying are the solutions whose verdicts say they meet item (on its
// good side), correct and flawed ones alternating as in the distill prompt.
func satisfying(rollouts []schema.Rollout, item schema.Item, max, maxChars int) []prompts.Solution {
	var met []schema.Rollout
	for _, r := range rollouts {
		for _, s := range r.Satisfaction {
			if s.ID == item.ID && s.Satisfied == (item.Polarity >= 0) {
				met = append(met, r)
				break
			}
		}
	}
	return pickSolutions(met, max, maxChars)
}

// stampDecompose names the decompose template as the record's distill
// template when the engine decomposes.
func (e *engine) stampDecompose(rec *schema.Record) {
	if e.seeds != nil {
		rec.Provenance.DistillTemplate = e.prompts.Hash(prompts.Decompose)
	}
}
