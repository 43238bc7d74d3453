package server

import (
	"context"
	"net/http"
	"slices"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// The training-time loops of /v1/score_group: RLCER's rubricator proposals
// (seed 002), RGR-GRPO's exploration assessment and off-policy member (seed
// 003), and the live rubric of --state-dir (livestate.go).

// guidanceJSON is RGR's exploration assessment as a /v1/score_group answer
// carries it.
type guidanceJSON struct {
	// Needed is false exactly when the best response meets every
	// criterion of the rubric it was scored with.
	Needed bool `json:"needed"`
	// Best is the index of the highest-reward on-policy response whose
	// judgment did not fail; -1 when there is none.
	Best int `json:"best"`
	// Failed are the ids of the criteria the best response does not meet,
	// in rubric order.
	Failed []int32 `json:"failed"`
	// Prompt is the refinement prompt (RGR appendix E.2) for the best
	// response and its failed criteria, as chat messages to send to the
	// policy; null when no refinement is needed.
	Prompt []prompts.Message `json:"prompt"`
	// Error says why there is no assessment (no response was judged).
	Error string `json:"error,omitempty"`
}

// rubricView is the rubric a group is scored with: Scored holds the items
// paid, Judged every item the judge is asked about (the paid ones and,
// with a live rubric, retired items and candidates whose statistics are
// still kept), PaidAt the index in Judged of each paid item, Version the
// live rubric's version (0 when it does not move).
type rubricView struct {
	Scored  *schema.Label
	Judged  []schema.Item
	PaidAt  []int
	Version int64
	// recorded: the group goes into the problem's live statistics.
	recorded bool
}

// staticView is the view of a rubric that does not move: every item paid.
func staticView(lab *schema.Label) rubricView {
	at := make([]int, len(lab.Rubric))
	for j := range at {
		at[j] = j
	}
	return rubricView{Scored: lab, Judged: lab.Rubric, PaidAt: at}
}

// nextID is the id after the largest of items'.
func nextID(items []schema.Item) int32 {
	var id int32
	for _, it := range items {
		id = max(id, it.ID)
	}
	return id + 1
}

// loopGroup scores a group with the loops' fields, or under a live rubric:
// every response is judged once, for the rubric's items and the proposals'
// criteria together.
func (s *Server) loopGroup(ctx context.Context, w http.ResponseWriter, problem *scoreItem, lab *schema.Label, scheme string, responses []string, sc *groupScratch) {
	loops := problem.loops
	view, verr := s.viewOf(lab)
	if verr != nil {
		writeError(w, verr.code, verr.Error())
		return
	}
	var props []reward.Proposal
	var pr reward.ProposedRubric
	if loops != nil && loops.proposals != nil {
		props = make([]reward.Proposal, len(loops.proposals))
		for k, text := range loops.proposals {
			props[k] = reward.ReadProposal(text)
		}
		pr = reward.ProposedItems(props, nextID(view.Judged))
	}
	ask := *lab
	ask.Rubric = append(slices.Clip(view.Judged), pr.Judged...)
	rs := sc.rollouts.Take(len(responses))
	labs := sc.labels.Take(len(responses))
	for i, text := range responses {
		steps := sc.spans.Extend(func(b []reward.StepSpan) []reward.StepSpan { return reward.AppendSteps(b, text) })
		rs[i], labs[i] = reward.AnalyzeStepsFinished(text, lab.GroundTruth, problem.finishOf(i), steps), &ask
	}
	s.judgeAll(ctx, labs, rs)

	paid := splitVerdicts(rs, func(v []schema.Satisfaction) []schema.Satisfaction { return pick(v, view.PaidAt) })
	proposed := splitVerdicts(rs, func(v []schema.Satisfaction) []schema.Satisfaction { return pr.Verdicts(v[len(view.Judged):]) })
	scoreLab, scoreRs := view.Scored, paid
	if scheme == schema.SchemeRLCER && props != nil {
		scoreLab, scoreRs = withProposals(view.Scored, paid, pr, proposed, loops.mode)
	}
	g := reward.ScoreGroupIn(s.cfg.Params, s.cfg.OnJudgeFailure, scheme, scoreLab, scoreRs, &sc.mem)
	for i := range g.Results {
		r := &g.Results[i]
		r.RequestID, r.Note, r.RubricVersion, r.OffPolicy = problem.requestID, problem.note, view.Version, !loops.onPolicy(i)
	}
	answer := groupJSON{Group: g}
	if props != nil {
		answer.Rubricator = reward.ScoreRubricators(s.cfg.Params, props, pr, proposed)
	}
	if loops != nil && loops.guide {
		answer.Guidance = s.guidance(lab, view.Scored.Rubric, responses, g.Results, paid, loops)
	}
	s.account(g.Results)
	if s.refuseFailed(w, g.Results) {
		return
	}
	if loops.assessment() {
		view.recorded = false // the same responses come back in the group's final call
	}
	if err := s.recordLive(lab, scheme, view, rs, responses, loops); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	s.maybeElicit(lab, view, responses, g.Results, scoreRs, loops)
	s.answerGroup(w, answer)
}

// splitVerdicts copies rs with each judged response's verdicts mapped by
// part; a failed judgment stays failed.
func splitVerdicts(rs []reward.Rollout, part func([]schema.Satisfaction) []schema.Satisfaction) []reward.Rollout {
	out := slices.Clone(rs)
	for i := range out {
		if out[i].Verdicts != nil {
			out[i].Verdicts = part(out[i].Verdicts)
		}
	}
	return out
}

// pick is the verdicts at the indexes at.
func pick(v []schema.Satisfaction, at []int) []schema.Satisfaction {
	out := make([]schema.Satisfaction, len(at))
	for j, k := range at {
		out[j] = v[k]
	}
	return out
}

// withProposals is the rubric and the verdicts the reasoner's rlcer reward
// uses with proposals: the proposed criteria alone (replace), or after the
// rubric's items (add).
func withProposals(lab *schema.Label, paid []reward.Rollout, pr reward.ProposedRubric, proposed []reward.Rollout, mode string) (*schema.Label, []reward.Rollout) {
	out := *lab
	if mode != proposalsAdd {
		out.Rubric = pr.Items
		return &out, proposed
	}
	out.Rubric = append(slices.Clip(lab.Rubric), pr.Items...)
	rs := slices.Clone(paid)
	for i := range rs {
		if rs[i].Verdicts != nil {
			rs[i].Verdicts = append(slices.Clip(rs[i].Verdicts), proposed[i].Verdicts...)
		}
	}
	return &out, rs
}

// guidance is RGR's exploration assessment of a scored group: the best
// on-policy response by reward, the criteria of items it fails, and the
// refinement prompt for it.
func (s *Server) guidance(lab *schema.Label, items []schema.Item, responses []string, results []reward.Result, paid []reward.Rollout, loops *loopFields) *guidanceJSON {
	rewards := make([]float64, len(results))
	candidate := make([]bool, len(results))
	for i := range results {
		rewards[i], candidate[i] = results[i].Reward, loops.onPolicy(i)
	}
	ex := reward.Explore(items, rewards, paid, candidate)
	out := &guidanceJSON{Needed: ex.Needed, Best: ex.Best, Failed: ex.Failed}
	if ex.Best < 0 {
		out.Failed = []int32{}
		out.Error = "no on-policy response was judged: nothing to assess"
		return out
	}
	if !ex.Needed {
		return out
	}
	var failed []schema.Item
	for _, it := range items {
		if slices.Contains(ex.Failed, it.ID) {
			failed = append(failed, it)
		}
	}
	msgs, err := s.cfg.Prompts.RefineGuidedMessages(lab.Question, responses[ex.Best], failed)
	if err != nil {
		out.Error = "rendering the refinement prompt: " + err.Error()
		return out
	}
	out.Prompt = msgs
	return out
}
