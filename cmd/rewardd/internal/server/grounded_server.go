package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// scoreGroundedItems scores the items whose rubric is a grounded question
// (glabs[i] set) into out, judging them concurrently (the judge bounds its
// own concurrency). The passage comes from the label, which came from the
// corpus or the request's label, never from the request's prompt. The
// server's default scheme is for math rubrics and is not applied here; a
// scheme the item or request names other than grounded is an error for the
// item.
func (s *Server) scoreGroundedItems(ctx context.Context, items []scoreItem, glabs []*schema.Label, out []reward.Result) {
	var wg sync.WaitGroup
	var labs []*schema.Label
	byLab := map[*schema.Label][]int{} // with Config.Group: the items to judge, by label
	for i, lab := range glabs {
		if lab == nil {
			continue
		}
		if err := reward.CheckGroundedScheme(items[i].scheme, lab); err != nil {
			out[i] = reward.ErrorResult(items[i].requestID, lab.ID, schema.SchemeGrounded, err.Error())
			continue
		}
		if s.cfg.Group && !reward.Silent(items[i].response) {
			if byLab[lab] == nil {
				labs = append(labs, lab)
			}
			byLab[lab] = append(byLab[lab], i)
			continue
		}
		wg.Go(func() {
			g, err := schema.GroundedScores{}, reward.ErrEmptyResponse // an empty response is not judged
			if !reward.Silent(items[i].response) {
				g, err = s.groundedScores(ctx, lab, items[i].response)
			}
			out[i] = reward.ScoreGrounded(lab, g, err)
			out[i].RequestID = items[i].requestID
		})
	}
	for _, lab := range labs {
		idx := byLab[lab]
		wg.Go(func() {
			responses := make([]string, len(items))
			for _, i := range idx {
				responses[i] = items[i].response
			}
			scores, errs := make([]schema.GroundedScores, len(items)), make([]error, len(items))
			s.groundedGroupScores(ctx, lab, responses, idx, scores, errs)
			for _, i := range idx {
				out[i] = reward.ScoreGrounded(lab, scores[i], errs[i])
				out[i].RequestID = items[i].requestID
			}
		})
	}
	wg.Wait()
}

// groundedGroup answers /v1/score_group for a grounded question: every
// response judged against the label's passage and criteria, with the
// leave-one-out advantages of seed 001.
func (s *Server) groundedGroup(ctx context.Context, w http.ResponseWriter, problem *scoreItem, lab *schema.Label, responses []string) {
	n := len(responses)
	if err := reward.CheckGroundedScheme(problem.scheme, lab); err != nil {
		g := reward.Group{Results: make([]reward.Result, n), Advantages: make([]reward.Advantage, n), Validity: []reward.ItemGroupValidity{}}
		for i := range g.Results {
			g.Results[i] = reward.ErrorResult(problem.requestID, lab.ID, schema.SchemeGrounded, err.Error())
			g.Advantages[i].Steps = []reward.StepAdvantage{}
		}
		s.noteErrors(g.Results)
		s.answerGroup(w, groupJSON{Group: g, Error: err.Error()})
		return
	}
	scores := make([]schema.GroundedScores, n)
	errs := make([]error, n)
	var judged []int // the responses to judge: an empty one is paid the floor
	for i, text := range responses {
		if reward.Silent(text) {
			errs[i] = reward.ErrEmptyResponse
			continue
		}
		judged = append(judged, i)
	}
	if s.cfg.Group {
		s.groundedGroupScores(ctx, lab, responses, judged, scores, errs)
	} else {
		s.warmFirst(ctx, len(judged), func() bool { return s.cfg.Judge.WarmGrounded(lab) }, func(k int) {
			i := judged[k]
			scores[i], errs[i] = s.groundedScores(ctx, lab, responses[i])
		})
	}
	g := reward.ScoreGroundedGroup(s.cfg.Params, lab, scores, errs)
	for i := range g.Results {
		g.Results[i].RequestID, g.Results[i].Note = problem.requestID, problem.note
	}
	s.account(g.Results)
	if s.refuseFailed(w, g.Results) {
		return
	}
	s.answerGroup(w, groupJSON{Group: g})
}

// groundedScores asks the judge for the scores of response, through the
// circuit breaker as the satisfaction judge is asked: while it is open the
// judge is not asked.
func (s *Server) groundedScores(ctx context.Context, lab *schema.Label, response string) (schema.GroundedScores, error) {
	call, err := s.breaker.allow(time.Now())
	if err != nil {
		return schema.GroundedScores{}, err
	}
	s.calls.start(time.Now())
	g, err := s.cfg.Judge.GroundedScores(ctx, lab, response)
	s.calls.done(time.Now())
	s.breaker.record(ctx, time.Now(), call, err)
	return g, err
}

// groundedGroupScores fills the scores (or errors) of the responses judged
// (indexes into responses) to the grounded question of lab from group
// judge requests (Config.Group), through the circuit breaker; a response
// whose group request failed is scored alone, so that no response fails
// its group-mates.
func (s *Server) groundedGroupScores(ctx context.Context, lab *schema.Label, responses []string, judged []int, scores []schema.GroundedScores, errs []error) {
	if len(judged) == 0 {
		return
	}
	call, err := s.breaker.allow(time.Now())
	if err != nil {
		for _, i := range judged {
			errs[i] = err
		}
		return
	}
	asked := make([]string, len(judged))
	for k, i := range judged {
		asked[k] = responses[i]
	}
	s.calls.start(time.Now())
	gs, ges := s.cfg.Judge.GroundedGroupScores(ctx, lab, asked)
	s.calls.done(time.Now())
	s.breaker.record(ctx, time.Now(), call, errors.Join(ges...))
	var again []int
	for k, i := range judged {
		switch {
		case ges[k] == nil:
			scores[i] = gs[k]
		case ctx.Err() != nil:
			errs[i] = ges[k]
		default:
			again = append(again, i)
		}
	}
	s.warmFirst(ctx, len(again), func() bool { return false }, func(k int) {
		i := again[k]
		scores[i], errs[i] = s.groundedScores(ctx, lab, responses[i])
	})
}
