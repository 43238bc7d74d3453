package pipeline

import (
	"context"
	"fmt"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// Group judging in the empirical stage (judge.group): each judge is asked
// about a record's rollouts (a question's answers) together, in one
// request per part of them that fits the response budget together
// (prompts.GroupParts), each response in its own block under a name, in
// an order drawn from the responses (prompts.GroupOrder), the verdicts
// mapped back by name. The first part is asked alone and the others once
// it is answered (warmFirst: they share its prefix). A part of one
// response is asked as a single request; a part whose verdicts cannot be
// had (the reply does not parse after the repairs, the endpoint refuses
// the request as malformed, as a server refuses a request over its
// context) is asked again one response at a time, so that no response
// costs its group-mates their verdicts.

// groupParts are the parts a group of responses (texts, with their
// extracted answers, answers[i] "" for none) is asked in: of the distinct
// texts (a text written twice is asked about once, its verdicts given to
// both), as parts of indexes into texts; copies[i] are the indexes of the
// later copies of text i.
func (e *engine) groupParts(texts, answers []string) (parts [][]int, copies map[int][]int) {
	budget := e.job.JudgeView().MaxResponseTokens
	first := map[string]int{}
	copies = map[int][]int{}
	var distinct, tokens []int
	for i, t := range texts {
		if f, ok := first[t]; ok {
			copies[f] = append(copies[f], i)
			continue
		}
		first[t] = i
		distinct = append(distinct, i)
		tokens = append(tokens, prompts.GroupResponseTokens(t, answers[i], budget))
	}
	parts = prompts.GroupParts(tokens, budget)
	for _, p := range parts {
		for k, i := range p {
			p[k] = distinct[i]
		}
	}
	return parts, copies
}

// askParts asks every part of parts (with copies, as groupParts returns
// them): one (of its index) alone for each response of a part of one,
// else together (group, which gives the copies their verdicts too; an
// error of it that unusableVerdict accepts has each of the part's
// responses asked alone).
func (e *engine) askParts(ctx context.Context, w *unit, jd judgeAt, parts [][]int, copies map[int][]int, group func(ctx context.Context, part []int) error, one func(ctx context.Context, i int) error) error {
	alone := func(ctx context.Context, part []int) error {
		var all []int
		for _, i := range part {
			all = append(append(all, i), copies[i]...)
		}
		return fanOut(ctx, len(all), func(ctx context.Context, m int) error { return one(ctx, all[m]) })
	}
	return warmFirst(ctx, len(parts), func(ctx context.Context, k int) error {
		part := parts[k]
		if len(part) == 1 {
			return alone(ctx, part)
		}
		err := group(ctx, part)
		if err == nil || !unusableVerdict(err) {
			return err
		}
		e.log.Debug("empirical: a group request gave no verdicts; its responses are asked alone", "id", w.p.ID, "responses", len(part), "judge", jd.name, "err", err)
		return alone(ctx, part)
	})
}

// judgeRolloutGroups has judge jd judge w's rollouts in group requests
// against the items (ids in the items' order, shown to the judge in
// order), putting each rollout's verdicts with put; one judges rollout i
// alone.
func (e *engine) judgeRolloutGroups(ctx context.Context, w *unit, jd judgeAt, ids []int32, order []schema.Item, put func(i int, v []schema.Satisfaction), one func(ctx context.Context, i int) error) error {
	texts, answers := make([]string, len(w.rollouts)), make([]string, len(w.rollouts))
	for i, r := range w.rollouts {
		texts[i], answers[i] = r.Text, r.ExtractedAnswer
	}
	parts, copies := e.groupParts(texts, answers)
	group := func(ctx context.Context, part []int) error {
		solutions := make([]prompts.GroupSolution, len(part))
		asked, steps := make([]string, len(part)), make([]int, len(part))
		for m, i := range part {
			solutions[m] = prompts.GroupSolution{Solution: texts[i], FinalAnswer: answers[i]}
			asked[m], steps[m] = texts[i], countSteps(texts[i])
		}
		msgs, seen, err := jd.prompts.SatisfyGroupView(e.job.JudgeView(), w.p.Text, order, solutions, prompts.GroupOrder(asked))
		if err != nil {
			return err
		}
		var verdicts [][]schema.Satisfaction
		err = e.askJudge(ctx, jd, jd.requestWith(job.GroupTemplate(e.job), msgs), e.job.Empirical.RepairAttempts, fmt.Sprintf("satisfaction verdicts for %d rollouts together", len(part)), &w.u, func(reply string) error {
			var err error
			verdicts, err = schema.ParseGroupSatisfaction(reply, prompts.GroupNames(seen), asked, ids, steps)
			return err
		})
		if err != nil {
			return err
		}
		for m, i := range part {
			e.countCut(seen[m].Shown)
			if s := seen[m].Shown; s.Cut {
				verdicts[m] = reward.UnseenPitfalls(verdicts[m], w.items, s.HiddenFrom, s.HiddenTo, reward.Steps(texts[i]))
			}
			put(i, verdicts[m])
			for _, c := range copies[i] {
				put(c, verdicts[m])
			}
		}
		return nil
	}
	return e.askParts(ctx, w, jd, parts, copies, group, one)
}

// scoreAnswerGroups has judge jd score the answers texts to question q in
// group requests against the passage, putting each answer's scores with
// put; one scores answer i alone.
func (e *engine) scoreAnswerGroups(ctx context.Context, w *unit, passage string, q *schema.GroundedQuestion, texts []string, jd judgeAt, put func(i int, s []float64), one func(ctx context.Context, i int) error) error {
	criteria := shown(q.Criteria, e.order(w.p.ID, jd, int(q.Index), len(q.Criteria)))
	parts, copies := e.groupParts(texts, make([]string, len(texts)))
	group := func(ctx context.Context, part []int) error {
		asked := make([]string, len(part))
		for m, i := range part {
			asked[m] = texts[i]
		}
		msgs, seen, err := jd.prompts.ScoreGroundedGroupView(e.job.JudgeView(), passage, q.Question, criteria, asked, prompts.GroupOrder(asked))
		if err != nil {
			return err
		}
		var scores []schema.GroundedScores
		err = e.askJudge(ctx, jd, jd.requestWith(job.GroupTemplate(e.job), msgs), e.job.Empirical.RepairAttempts, fmt.Sprintf("scores of %d answers to question %d together", len(part), q.Index+1), &w.u, func(reply string) error {
			var err error
			scores, err = schema.ParseGroupGroundedScores(reply, prompts.GroupNames(seen), asked, q.Criteria)
			return err
		})
		if err != nil {
			return err
		}
		for m, i := range part {
			e.countCut(seen[m].Shown)
			put(i, scores[m].Scores)
			for _, c := range copies[i] {
				put(c, scores[m].Scores)
			}
		}
		return nil
	}
	return e.askParts(ctx, w, jd, parts, copies, group, one)
}
