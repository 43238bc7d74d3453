package server

import (
	"context"
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
	for i, lab := range glabs {
		if lab == nil {
			continue
		}
		if err := reward.CheckGroundedScheme(items[i].scheme, lab); err != nil {
			out[i] = reward.ErrorResult(items[i].requestID, lab.ID, schema.SchemeGrounded, err.Error())
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
	var wg sync.WaitGroup
	for i, text := range responses {
		if reward.Silent(text) {
			errs[i] = reward.ErrEmptyResponse // not judged: paid the floor
			continue
		}
		wg.Go(func() { scores[i], errs[i] = s.groundedScores(ctx, lab, text) })
	}
	wg.Wait()
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
