package judge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rubricforge/rubricforge/internal/promtext"
	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// NewPanel returns a judge that asks every member about every response and
// answers with the panel's verdict, so that no single judge decides a
// reward and a broken judge never raises one:
//
//   - a satisfaction verdict is a strict majority of the votes FOR the
//     response (judgestats.Met): a member's verdict that the response
//     meets a positive item or avoids a PITFALL is a vote for it; a member
//     that failed (endpoint down, reply unusable after its repairs) votes
//     against it, which for a PITFALL means the pitfall counts as present;
//     a tie goes against the response, whatever the members' order. A
//     verdict the panel calls satisfied takes the earliest step that a
//     member saying so named;
//   - a grounded criterion's score is the lower median of the members'
//     scores, a failed member's counted as 0 (judgestats.PanelScore).
//
// The panel fails only when every member failed; its error then names each
// member's. Each member keeps its own endpoint, model, templates, seed,
// memory and counters (Members); the panel's memory is theirs, so a member
// that failed is asked again next time. A panel of k members sends k times
// the judge requests of one judge.
func NewPanel(members []*Judge) (*Judge, error) {
	if len(members) < 2 {
		return nil, fmt.Errorf("judge: a judge panel needs at least two judges, got %d", len(members))
	}
	seen := map[string]bool{}
	for _, m := range members {
		switch {
		case m == nil:
			return nil, errors.New("judge: a judge panel's member is nil")
		case m.members != nil:
			return nil, fmt.Errorf("judge: judge %q is itself a panel", m.opt.Name)
		case seen[m.opt.Name]:
			return nil, fmt.Errorf("judge: two judges of the panel are named %q; give each its own name", m.opt.Name)
		}
		seen[m.opt.Name] = true
	}
	return &Judge{members: slices.Clone(members), opt: Options{Name: "panel"}, latency: promtext.NewHistogram(promtext.LatencyBuckets)}, nil
}

// ErrMemberLate ends the call of a panel member that did not answer within
// the panel's member deadline after another member answered.
var ErrMemberLate = errors.New("judge: no answer within the panel's member deadline")

// Name is the judge's name (Options.Name), "panel" for a panel.
func (j *Judge) Name() string { return j.opt.Name }

// Members are a panel's judges in the order given to NewPanel; nil for a
// single judge.
func (j *Judge) Members() []*Judge { return slices.Clone(j.members) }

// memberVerdicts is one member's answer: its verdicts in item order, or
// the error that left it without any.
type memberVerdicts struct {
	v   []schema.Satisfaction
	err error
}

func (j *Judge) panelVerdicts(ctx context.Context, question string, items []schema.Item, r *reward.Rollout) ([]schema.Satisfaction, error) {
	answers := make([]memberVerdicts, len(j.members))
	errs := j.askMembers(ctx, func(ctx context.Context, i int, m *Judge) error {
		v, err := m.Verdicts(ctx, question, items, r)
		answers[i] = memberVerdicts{v, err}
		return err
	})
	if err := j.panelFailure(errs); err != nil {
		return nil, err
	}
	return panelSatisfaction(items, answers), nil
}

// askMembers asks every member at once with ask, each under a context of
// its own, counting the panel's call and its latency, and returns each
// member's error. With a member deadline, the members still out that long
// after the first answered are cut off (their context ended with
// ErrMemberLate, their error saying so). A member that failed has not
// answered: one that fails at once (down, its breaker open) does not start
// the clock on those still judging.
func (j *Judge) askMembers(ctx context.Context, ask func(ctx context.Context, i int, m *Judge) error) []error {
	start := time.Now()
	j.calls.Add(1)
	n := len(j.members)
	errs := make([]error, n)
	cancels := make([]context.CancelCauseFunc, n)
	finished := make(chan int, n)
	for i, m := range j.members {
		mctx, cancel := context.WithCancelCause(ctx)
		cancels[i] = cancel
		go func() {
			errs[i] = ask(mctx, i, m)
			if errs[i] != nil && errors.Is(context.Cause(mctx), ErrMemberLate) {
				errs[i] = fmt.Errorf("%w (%s after the first judge answered): %w", ErrMemberLate, j.memberDeadline, errs[i])
			}
			finished <- i
		}()
	}
	in := make([]bool, n)
	var cut <-chan time.Time // set once the first member answered
	for range n {
		var i int
		select {
		case i = <-finished:
		case <-cut: // fires once
			for m, ok := range in {
				if !ok {
					cancels[m](ErrMemberLate)
				}
			}
			i = <-finished
		}
		in[i] = true
		if errs[i] == nil && cut == nil && j.memberDeadline > 0 {
			t := time.NewTimer(j.memberDeadline)
			defer t.Stop()
			cut = t.C
		}
	}
	for _, cancel := range cancels {
		cancel(nil)
	}
	j.latency.Observe(time.Since(start).Seconds())
	return errs
}

// panelFailure is the panel's error when every member failed (each
// member's error named and wrapped), nil when one answered.
func (j *Judge) panelFailure(errs []error) error {
	named := make([]error, 0, len(errs))
	for i, err := range errs {
		if err == nil {
			return nil
		}
		named = append(named, fmt.Errorf("judge %s: %w", j.members[i].opt.Name, err))
	}
	j.failures.Add(1)
	return fmt.Errorf("every judge of the panel failed: %w", errors.Join(named...))
}

// panelSatisfaction is the panel's verdict on each item from its members'
// answers (see NewPanel). The step of a satisfied verdict is
// judgestats.AgreedStep's, the rule the pipeline's panels keep too; an
// unsatisfied item's is -1 (none), so no step takes part in a step's
// normalization (reward.NormalizeSteps) for an item the panel did not
// find. A PITFALL the panel counts as fallen into though no member that
// answered placed it (a failed member's vote, or a tie, decided it) is in
// the whole solution, step 0, not in none: a failure must not erase it
// from the step advantages (reward charges a PITFALL at no step of the
// response to the rollout's compared steps).
func panelSatisfaction(items []schema.Item, answers []memberVerdicts) []schema.Satisfaction {
	out := make([]schema.Satisfaction, len(items))
	votes := make([]judgestats.Vote, len(answers))
	steps := make([]judgestats.StepVote, len(answers))
	for i, it := range items {
		for k, a := range answers {
			steps[k] = judgestats.StepVote{}
			if a.err == nil && i < len(a.v) {
				steps[k] = judgestats.StepVote{Vote: judgestats.Vote{OK: true, Yes: a.v[i].Satisfied}, Step: a.v[i].Step}
			}
			votes[k] = steps[k].Vote
		}
		against := reward.Polarity(it) < 0
		satisfied := judgestats.Met(votes, against)
		step := int32(-1)
		if satisfied {
			step = judgestats.AgreedStep(steps, true)
		}
		if satisfied && against && step < 0 {
			step = 0 // counted against the response by a failure or a tie: the whole solution
		}
		out[i] = schema.Satisfaction{ID: it.ID, Satisfied: satisfied, Step: step}
	}
	return out
}

func (j *Judge) panelScores(ctx context.Context, lab *schema.Label, response string) (schema.GroundedScores, error) {
	answers := make([]schema.GroundedScores, len(j.members))
	errs := j.askMembers(ctx, func(ctx context.Context, i int, m *Judge) error {
		g, err := m.GroundedScores(ctx, lab, response)
		answers[i] = g
		return err
	})
	if err := j.panelFailure(errs); err != nil {
		return schema.GroundedScores{}, err
	}
	return panelGrounded(lab.Grounded.Criteria, answers, errs), nil
}

// panelGrounded is the panel's scores of each criterion: the lower median
// of the members' scores, a failed member's counted as 0.
func panelGrounded(criteria []schema.Criterion, answers []schema.GroundedScores, errs []error) schema.GroundedScores {
	g := schema.GroundedScores{Scores: make([]float64, len(criteria)), MaxTotal: schema.TotalWeight(criteria)}
	scores := make([]judgestats.Score, len(answers))
	for c := range criteria {
		for k, a := range answers {
			scores[k] = judgestats.Score{}
			if errs[k] == nil && c < len(a.Scores) {
				scores[k] = judgestats.Score{OK: true, Value: a.Scores[c]}
			}
		}
		g.Scores[c] = judgestats.PanelScore(scores)
		g.Total += g.Scores[c]
	}
	g.Reasoning = fmt.Sprintf("the lower median of %d judges' scores", len(answers))
	return g
}

// panelStats are the members' counters added up, except Calls and
// Failures: the panel's judgments, and those in which every member failed.
func (j *Judge) panelStats() JudgeStats {
	st := JudgeStats{Calls: j.calls.Load(), Failures: j.failures.Load()}
	for _, m := range j.members {
		ms := m.Stats()
		st.MemHits += ms.MemHits
		st.DiskHits += ms.DiskHits
		st.Cached += ms.Cached
		st.PassagesCut += ms.PassagesCut
		st.ResponsesCut += ms.ResponsesCut
	}
	return st
}
