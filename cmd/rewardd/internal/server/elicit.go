package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// Elicitation (--elicit; OnlineRubrics' pairwise elicitation): after a
// group of a problem is recorded, its best and worst on-policy responses
// (by reward) and the corpus's stored strong-model rollout of the problem
// go to an extractor, which proposes criteria that separate them and that
// the live rubric lacks. The validity judge then reads each (the corpus's
// validity template); a criterion it finds valid joins the problem's live
// rubric as a candidate: judged with every group from then on, paid only
// once the next groups show its satisfaction correlated with correctness
// (livestate: corr > α over Settings.AdmitGroups groups), capped per
// problem. Every candidate, rejection, admission and drop is logged in the
// state log with its evidence. One worker elicits at a time, in the
// background; a group never waits for it.

// ElicitOptions configure elicitation.
type ElicitOptions struct {
	// AdmitGroups is how many groups a candidate is measured over before it
	// is admitted or dropped; MaxPerProblem caps the criteria admitted per
	// problem; Every is how many groups of a problem pass between its
	// elicitations (default the window).
	AdmitGroups, MaxPerProblem, Every int
	// MaxCost bounds what elicitation spends in all, in USD, across
	// restarts (the state log keeps the spending); 0: no bound.
	MaxCost float64
	// Client asks the extractor (Model) and the validity judge
	// (ValidityModel); its Meter prices them. Required to elicit; the
	// server is made before it only in tests.
	Client               *llm.Client
	Meter                *llm.Meter
	Model, ValidityModel string
	// References are the corpus's stored strong-model rollouts, by problem
	// id (LoadReferences); a problem without one is elicited from its best
	// and worst responses alone.
	References map[string]string
	// onDone, when set (tests), is called after each elicitation.
	onDone func()
}

// maxEvidenceChars bounds the response excerpts kept as evidence.
const maxEvidenceChars = 600

// elicitJob is one problem's elicitation: the strings are copies, owned
// by the job.
type elicitJob struct {
	problem, question, groundTruth string
	items                          []schema.Item
	better, worse                  string
}

// elicitor runs elicitations in the background.
type elicitor struct {
	opt   ElicitOptions
	jobs  chan elicitJob
	runs  atomic.Int64 // elicitations made
	added atomic.Int64 // candidates added
	rejected, dropped,
	failed atomic.Int64
	exhausted atomic.Bool // the budget is spent: no more elicitation
}

func newElicitor(opt ElicitOptions) *elicitor {
	if opt.Every <= 0 {
		opt.Every = 16
	}
	return &elicitor{opt: opt, jobs: make(chan elicitJob, 64)}
}

// maybeElicit queues an elicitation for a recorded group when its problem
// is due and the group has a better and a worse response.
func (s *Server) maybeElicit(lab *schema.Label, view rubricView, responses []string, results []reward.Result, paid []reward.Rollout, loops *loopFields) {
	e := s.elicit
	if e == nil || !view.recorded || e.exhausted.Load() || !s.cfg.Live.ElicitDue(lab.ID, e.opt.Every) {
		return
	}
	best, worst := -1, -1
	for i := range results {
		if !paid[i].JudgeOK() || !loops.onPolicy(i) {
			continue
		}
		if best < 0 || results[i].Reward > results[best].Reward {
			best = i
		}
		if worst < 0 || results[i].Reward < results[worst].Reward {
			worst = i
		}
	}
	if best < 0 || results[best].Reward == results[worst].Reward {
		return // nothing separates the responses
	}
	job := elicitJob{problem: lab.ID, question: lab.Question, groundTruth: lab.GroundTruth, items: view.Judged,
		better: strings.Clone(responses[best]), worse: strings.Clone(responses[worst])}
	select {
	case e.jobs <- job:
	default:
		e.dropped.Add(1) // the worker is behind; the problem is due again at its next group
	}
}

// runElicitor elicits until ctx ends.
func (s *Server) runElicitor(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-s.elicit.jobs:
			s.elicitOne(ctx, job)
			if s.elicit.opt.onDone != nil {
				s.elicit.opt.onDone()
			}
		}
	}
}

// elicitOne runs one elicitation and records what came of it.
func (s *Server) elicitOne(ctx context.Context, job elicitJob) {
	e := s.elicit
	if e.opt.MaxCost > 0 && s.cfg.Live.ElicitSpent() >= e.opt.MaxCost {
		e.stop(s, "the elicitation budget is spent")
		return
	}
	before := e.opt.Meter.Spent()
	valid, rejected, err := s.extract(ctx, job)
	cost := e.opt.Meter.Spent() - before
	e.runs.Add(1)
	if rerr := s.cfg.Live.AddCandidates(job.problem, valid, rejected, cost); rerr != nil {
		s.log.Error("elicitation: recording its candidates", "problem_id", job.problem, "error", rerr.Error())
		return
	}
	e.added.Add(int64(len(valid)))
	e.rejected.Add(int64(len(rejected)))
	if err == nil {
		return
	}
	e.failed.Add(1)
	if errors.Is(err, llm.ErrBudgetExhausted) {
		e.stop(s, err.Error())
		return
	}
	s.log.Warn("elicitation failed", "problem_id", job.problem, "error", err.Error())
}

func (e *elicitor) stop(s *Server, why string) {
	if !e.exhausted.Swap(true) {
		s.log.Warn("elicitation stopped", "reason", why, "spent_usd", s.cfg.Live.ElicitSpent(), "max_cost_usd", e.opt.MaxCost)
	}
}

// extract asks the extractor for new criteria and the validity judge about
// each one new to the rubric.
func (s *Server) extract(ctx context.Context, job elicitJob) (valid, rejected []livestate.Candidate, err error) {
	e := s.elicit
	msgs, err := s.cfg.Prompts.ElicitMessages(prompts.ElicitInput{Question: job.question, GroundTruth: job.groundTruth, Items: job.items,
		Better: job.better, Worse: job.worse, Reference: e.opt.References[job.problem]})
	if err != nil {
		return nil, nil, err
	}
	var proposed []schema.Item
	zero := 0.0
	err = e.opt.Client.ChatParsed(ctx, llm.Request{Stage: "elicit", Model: e.opt.Model, Messages: msgs, Temperature: &zero,
		Scope: llm.Scope{Template: s.cfg.Prompts.Hash(prompts.Elicit)}}, llm.Ask{
		What: "elicited criteria", Repairs: 1, Repair: s.cfg.Prompts.RepairMessages,
		Parse: func(reply string) error {
			var err error
			proposed, err = schema.ParseElicited(reply)
			return err
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("the extractor: %w", err)
	}
	known := map[string]bool{}
	for _, it := range job.items {
		known[schema.CriterionKey(schema.ProposedCriterion{Criterion: it.Text, Points: float64(it.Polarity)})] = true
	}
	ev := livestate.Evidence{Better: excerpt(job.better), Worse: excerpt(job.worse), Model: e.opt.Model}
	for _, it := range proposed {
		key := schema.CriterionKey(schema.ProposedCriterion{Criterion: it.Text, Points: float64(it.Polarity)})
		if known[key] {
			continue
		}
		known[key] = true
		it.Text = reward.JudgeSafe(it.Text)
		verdict, err := s.judgeValidity(ctx, job, it)
		if err != nil {
			return valid, rejected, fmt.Errorf("the validity judge: %w", err)
		}
		c := livestate.Candidate{Item: it, Evidence: ev}
		c.Evidence.Reason = verdict.Reason
		if verdict.Valid {
			valid = append(valid, c)
		} else {
			rejected = append(rejected, c)
		}
	}
	return valid, rejected, nil
}

// judgeValidity asks the validity judge (the corpus's judge_item template)
// about an elicited criterion.
func (s *Server) judgeValidity(ctx context.Context, job elicitJob, it schema.Item) (schema.Verdict, error) {
	e := s.elicit
	msgs, err := s.cfg.Prompts.JudgeItemMessages(job.question, job.groundTruth, it)
	if err != nil {
		return schema.Verdict{}, err
	}
	var v schema.Verdict
	zero := 0.0
	err = e.opt.Client.ChatParsed(ctx, llm.Request{Stage: "elicit", Model: e.opt.ValidityModel, Messages: msgs, Temperature: &zero,
		Scope: llm.Scope{Template: s.cfg.Prompts.Hash(prompts.JudgeItem)}}, llm.Ask{
		What: "validity verdict", Repairs: 1, Repair: s.cfg.Prompts.RepairMessages,
		Parse: func(reply string) error {
			var err error
			v, err = schema.ParseValidity(reply)
			return err
		},
	})
	return v, err
}

// excerpt is the start of a response, for evidence.
func excerpt(s string) string {
	if len(s) <= maxEvidenceChars {
		return s
	}
	cut := maxEvidenceChars
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// writeElicitMetrics writes elicitation's counters.
func (s *Server) writeElicitMetrics(w io.Writer) {
	e := s.elicit
	if e == nil {
		return
	}
	for _, c := range []struct {
		name, help string
		v          int64
	}{
		{"rewardd_elicit_runs_total", "Elicitations made (--elicit).", e.runs.Load()},
		{"rewardd_elicit_candidates_total", "Elicited criteria the validity judge found valid, added as candidates.", e.added.Load()},
		{"rewardd_elicit_rejected_total", "Elicited criteria the validity judge found invalid.", e.rejected.Load()},
		{"rewardd_elicit_failed_total", "Elicitations that failed (the extractor or the judge).", e.failed.Load()},
		{"rewardd_elicit_skipped_total", "Elicitations not made because the worker was behind.", e.dropped.Load()},
	} {
		help(w, c.name, "counter", c.help)
		fmt.Fprintf(w, "%s %d\n", c.name, c.v)
	}
	help(w, "rewardd_elicit_cost_usd", "gauge", "What elicitation has spent, across restarts, in USD (--elicit-max-cost bounds it).")
	fmt.Fprintf(w, "rewardd_elicit_cost_usd %g\n", s.cfg.Live.ElicitSpent())
}
