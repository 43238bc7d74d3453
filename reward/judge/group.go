package judge

import (
	"context"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// Group judging (rewardd --judge-group, its Config.Group): one request asks
// the judge about every response of a group to one rubric, math (the
// satisfy_group template) or grounded (score_grounded_group), each response
// in its own block under a name, R1, R2, ..., in an order drawn per request
// from the responses themselves (prompts.GroupOrder); the reply gives one
// line per name, each a single reply of its own, mapped back by name
// (schema.ParseGroupSatisfaction, schema.ParseGroupGroundedScores). A reply
// that does not give every name exactly once, or whose line for one of
// them does not parse, fails its request: no verdict is taken from a
// broken reply, and the caller judges those responses alone.
//
// A group too long for one request is asked in parts (prompts.GroupParts):
// the responses of one request, as shown, fit together in the response
// budget (Options.MaxResponseTokens), so a group request is never longer
// than a single one can be and is not sent only to be refused for the
// judge's context. The first part is asked alone and the others once it
// is answered, as warm-first does for single requests. A part of one
// response is asked as a single request. The verdicts of each response are
// kept in memory as Verdicts keeps them, under the group templates' salts.

// GroupVerdicts judges rs, responses to one rubric, in group requests and
// returns, by response, its verdicts or the error of the request that was
// to judge it (a response whose request failed has nil verdicts: the
// caller judges it alone, Verdicts). The responses already in memory are
// not asked about. A panel judges each response alone (Verdicts).
func (j *Judge) GroupVerdicts(ctx context.Context, question string, items []schema.Item, rs []*reward.Rollout) ([][]schema.Satisfaction, []error) {
	out, errs := make([][]schema.Satisfaction, len(rs)), make([]error, len(rs))
	if j.members != nil || len(rs) < 2 {
		for i, r := range rs {
			out[i], errs[i] = j.Verdicts(ctx, question, items, r)
		}
		return out, errs
	}
	rubric := j.groupRubricKey(question, items)
	texts := make([]string, len(rs))
	for i, r := range rs {
		texts[i] = r.Response
	}
	ask, copyOf := distinctToAsk(texts, func(i int) bool {
		v, ok := j.sat.cached(responseKey(rubric, rs[i].Response), &j.memHits)
		out[i] = v
		return ok
	})
	tokens := make([]int, len(ask))
	for k, i := range ask {
		tokens[k] = prompts.GroupResponseTokens(rs[i].Response, rs[i].Extracted, j.opt.MaxResponseTokens)
	}
	askParts(j.parts(ask, tokens), func(part []int) {
		if len(part) == 1 {
			i := part[0]
			out[i], errs[i] = j.Verdicts(ctx, question, items, rs[i])
			return
		}
		asked := make([]*reward.Rollout, len(part))
		for k, i := range part {
			asked[k] = rs[i]
		}
		var verdicts [][]schema.Satisfaction
		err := j.guarded(ctx, func() error {
			return j.slot(ctx, func() (err error) {
				verdicts, err = j.askGroup(ctx, question, items, asked)
				return err
			})
		})
		for k, i := range part {
			if errs[i] = err; err == nil {
				out[i] = verdicts[k]
				j.sat.store(responseKey(rubric, rs[i].Response), verdicts[k])
			}
		}
	})
	for i, f := range copyOf {
		out[i], errs[i] = out[f], errs[f]
	}
	return out, errs
}

// GroundedGroupScores scores responses, answers to the grounded question
// of lab, in group requests, as GroundedScores scores one: by response, its
// scores or the error of the request that was to score it (the caller
// scores such a response alone). The responses already in memory are not
// asked about; a panel scores each response alone (GroundedScores).
func (j *Judge) GroundedGroupScores(ctx context.Context, lab *schema.Label, responses []string) ([]schema.GroundedScores, []error) {
	out, errs := make([]schema.GroundedScores, len(responses)), make([]error, len(responses))
	if j.members != nil || len(responses) < 2 || lab.Grounded == nil {
		for i, r := range responses {
			out[i], errs[i] = j.GroundedScores(ctx, lab, r)
		}
		return out, errs
	}
	rubric := j.groundedKeyOf(j.groundedGroupSalt, lab)
	ask, copyOf := distinctToAsk(responses, func(i int) bool {
		g, ok := j.grounded.cached(responseKey(rubric, responses[i]), &j.memHits)
		out[i] = g
		return ok
	})
	tokens := make([]int, len(ask))
	for k, i := range ask {
		tokens[k] = prompts.GroupResponseTokens(responses[i], "", j.opt.MaxResponseTokens)
	}
	askParts(j.parts(ask, tokens), func(part []int) {
		if len(part) == 1 {
			i := part[0]
			out[i], errs[i] = j.GroundedScores(ctx, lab, responses[i])
			return
		}
		asked := make([]string, len(part))
		for k, i := range part {
			asked[k] = responses[i]
		}
		var scores []schema.GroundedScores
		err := j.guarded(ctx, func() error {
			return j.slot(ctx, func() (err error) {
				scores, err = j.askGroundedGroup(ctx, lab, asked)
				return err
			})
		})
		for k, i := range part {
			if errs[i] = err; err == nil {
				out[i] = scores[k]
				j.grounded.store(responseKey(rubric, responses[i]), scores[k])
			}
		}
	})
	for i, f := range copyOf {
		out[i], errs[i] = out[f], errs[f]
	}
	return out, errs
}

// distinctToAsk lists the responses of a group to ask about: those whose
// verdicts are not in memory (held reports, for response i, whether they
// are, having filled them in), each text once; copyOf maps a later copy of
// an asked text to the response asked about in its place.
func distinctToAsk(texts []string, held func(i int) bool) (ask []int, copyOf map[int]int) {
	first := map[string]int{}
	copyOf = map[int]int{}
	for i, t := range texts {
		if held(i) {
			continue
		}
		if f, ok := first[t]; ok {
			copyOf[i] = f
			continue
		}
		first[t] = i
		ask = append(ask, i)
	}
	return ask, copyOf
}

// parts splits the responses ask (tokens[k] the estimated tokens ask[k]
// takes in a group request, prompts.GroupResponseTokens) into the parts
// asked in one request each (prompts.GroupParts under the response
// budget).
func (j *Judge) parts(ask []int, tokens []int) [][]int {
	parts := prompts.GroupParts(tokens, j.opt.MaxResponseTokens)
	for _, p := range parts {
		for k, i := range p {
			p[k] = ask[i]
		}
	}
	return parts
}

// askParts runs ask for every part: the first alone, the others at once
// when it is done (they share its prompt's prefix).
func askParts(parts [][]int, ask func(part []int)) {
	if len(parts) == 0 {
		return
	}
	ask(parts[0])
	var wg sync.WaitGroup
	for _, p := range parts[1:] {
		wg.Go(func() { ask(p) })
	}
	wg.Wait()
}

// groupRubricKey is rubricKey under the group template's salt.
func (j *Judge) groupRubricKey(question string, items []schema.Item) xxhash.Digest {
	var d xxhash.Digest
	d.Reset()
	hashString(&d, j.groupSalt)
	hashString(&d, question)
	for _, it := range items {
		hashInt(&d, uint64(it.ID))
		hashString(&d, it.Type)
		hashString(&d, it.Text)
	}
	return d
}

func (j *Judge) askGroup(ctx context.Context, question string, items []schema.Item, rs []*reward.Rollout) ([][]schema.Satisfaction, error) {
	solutions := make([]prompts.GroupSolution, len(rs))
	texts := make([]string, len(rs))
	steps := make([]int, len(rs))
	for i, r := range rs {
		solutions[i] = prompts.GroupSolution{Solution: r.Response, FinalAnswer: r.Extracted}
		texts[i], steps[i] = r.Response, len(r.Steps)
	}
	msgs, shown, err := j.prompts.SatisfyGroupView(j.view(), question, items, solutions, prompts.GroupOrder(texts))
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	req := j.request(JudgeStage, prompts.SatisfyGroup, msgs)
	var verdicts [][]schema.Satisfaction
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What:    "group satisfaction verdicts",
		Repairs: j.opt.Repairs,
		Parse: func(reply string) error {
			v, err := schema.ParseGroupSatisfaction(reply, prompts.GroupNames(shown), texts, ids, steps)
			verdicts = v
			return err
		},
		Repair:     j.prompts.RepairMessages,
		OnResponse: j.countDiskHit,
	})
	if err != nil {
		return nil, err
	}
	for i := range verdicts {
		if shown[i].Shown.Cut {
			j.responsesCut.Add(1)
		}
		verdicts[i] = unseenPitfalls(verdicts[i], items, shown[i].Shown, rs[i].Steps)
	}
	return verdicts, nil
}

func (j *Judge) askGroundedGroup(ctx context.Context, lab *schema.Label, responses []string) ([]schema.GroundedScores, error) {
	criteria := lab.Grounded.Criteria
	passage, cut := prompts.FitPassage(lab.Grounded.Passage, j.opt.PassageTokens)
	if cut {
		j.passagesCut.Add(1)
	}
	msgs, shown, err := j.prompts.ScoreGroundedGroupView(j.view(), passage, lab.Question, criteria, responses, prompts.GroupOrder(responses))
	if err != nil {
		return nil, err
	}
	for _, s := range shown {
		if s.Shown.Cut {
			j.responsesCut.Add(1)
		}
	}
	req := j.request(GroundedJudgeStage, prompts.ScoreGroundedGroup, msgs)
	var scores []schema.GroundedScores
	err = j.client.ChatParsed(ctx, req, llm.Ask{
		What:    "grounded group scores",
		Repairs: j.opt.GroundedRepairs,
		Parse: func(reply string) error {
			var err error
			scores, err = schema.ParseGroupGroundedScores(reply, prompts.GroupNames(shown), responses, criteria)
			return err
		},
		Repair:     j.prompts.RepairMessages,
		OnResponse: j.countDiskHit,
	})
	return scores, err
}

// countDiskHit counts a reply served from the llm response cache.
func (j *Judge) countDiskHit(resp *llm.Response) {
	if resp.Cached {
		j.diskHits.Add(1)
	}
}
