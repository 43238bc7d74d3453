package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// empirical judges every rollout against the rubric (with empirical.panel,
// every judge of the panel; the panel's verdicts, panelSatisfaction, go on
// the rollouts and each judge's in the record's panel), and measures each
// item over the judged rollouts (see measureItems). A rollout whose
// verdicts stay unusable (they did not parse after their repairs, or the
// endpoint refused the request as malformed; with a panel, from every
// judge) keeps an empty satisfaction list; the problem is not lost for it.
func (e *engine) empirical(ctx context.Context, w *unit) error {
	rollouts, items := w.rollouts, w.items
	judges := e.judges[job.StageEmpirical]
	ids := itemIDs(items)
	n := len(rollouts)
	sat := make([][][]schema.Satisfaction, n) // by rollout, by judge; nil: the judge gave none
	for i := range sat {
		sat[i] = make([][]schema.Satisfaction, len(judges))
	}
	// Each judge is asked about the first rollout alone, then about the
	// others at once: they share the first's prompt but for the rollout
	// (the items in the problem's order for that judge), so a server's
	// prefix cache computes the rubric once (warmFirst). With judge.group
	// it is asked about them together (judgeRolloutGroups).
	err := fanOut(ctx, len(judges), func(ctx context.Context, j int) error {
		jd := judges[j]
		order := shown(items, e.order(w.p.ID, jd, 0, len(items)))
		one := func(ctx context.Context, i int) (err error) {
			sat[i][j], err = e.judgeRollout(ctx, w, jd, ids, order, i)
			return err
		}
		if job.GroupOn(e.job) {
			return e.judgeRolloutGroups(ctx, w, jd, ids, order, func(i int, v []schema.Satisfaction) { sat[i][j] = v }, one)
		}
		return warmFirst(ctx, n, one)
	})
	if err != nil {
		return err
	}
	for i := range rollouts {
		rollouts[i].Satisfaction = e.rolloutVerdicts(w, items, rollouts[i].Index, sat[i])
	}
	measureItems(rollouts, items, e.job.Empirical.Alpha)
	return nil
}

// judgeRollout is judge jd's verdicts on rollout i of w against the
// items (ids in the items' order, shown to the judge in order); nil when
// the judge gave none (they did not parse after the repairs, or the
// endpoint refused the request as malformed).
func (e *engine) judgeRollout(ctx context.Context, w *unit, jd judgeAt, ids []int32, order []schema.Item, i int) ([]schema.Satisfaction, error) {
	r := w.rollouts[i]
	msgs, seen, err := jd.prompts.SatisfyView(e.job.JudgeView(), w.p.Text, r.Text, r.ExtractedAnswer, order)
	if err != nil {
		return nil, err
	}
	e.countCut(seen)
	steps := countSteps(r.Text)
	var verdicts []schema.Satisfaction
	err = e.askJudge(ctx, jd, jd.request(msgs), e.job.Empirical.RepairAttempts, fmt.Sprintf("satisfaction verdicts for rollout %d", r.Index), &w.u, func(reply string) error {
		var err error
		verdicts, err = schema.ParseSatisfactionOf(reply, r.Text, ids, steps)
		return err
	})
	if err != nil && unusableVerdict(err) {
		e.log.Debug("empirical: a judge leaves a rollout unjudged", "id", w.p.ID, "rollout", r.Index, "judge", jd.name, "err", err)
		e.causes.add(job.StageEmpirical, err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if seen.Cut {
		verdicts = reward.UnseenPitfalls(verdicts, w.items, seen.HiddenFrom, seen.HiddenTo, reward.Steps(r.Text))
	}
	return verdicts, nil
}

// rolloutVerdicts are the verdicts stored on a rollout from its judges'
// (byJudge[j] nil when judge j gave none): the one judge's, or the panel's
// (panelSatisfaction), each judge's then kept in the record's panel; nil
// when no judge gave any.
func (e *engine) rolloutVerdicts(w *unit, items []schema.Item, index int32, byJudge [][]schema.Satisfaction) []schema.Satisfaction {
	if !e.hasPanel(job.StageEmpirical) {
		return byJudge[0]
	}
	rv := schema.RolloutVerdicts{Rollout: index}
	answered := false
	for j, sat := range byJudge {
		js := schema.JudgeSatisfaction{Judge: e.judges[job.StageEmpirical][j].name, Failed: sat == nil, Satisfaction: sat}
		if sat == nil {
			js.Satisfaction = []schema.Satisfaction{}
		}
		answered = answered || sat != nil
		rv.Judges = append(rv.Judges, js)
	}
	w.panel.Satisfaction = append(w.panel.Satisfaction, rv)
	if !answered {
		return nil
	}
	return panelSatisfaction(items, byJudge)
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
