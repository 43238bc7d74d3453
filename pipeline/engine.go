package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/verify"
)

// engine turns one problem into a record or a failure, stage by stage.
type engine struct {
	job         *job.Job
	prompts     *prompts.Set
	clients     map[string]*llm.Client // by stage
	stageTimes  *stageTimes
	toolVersion string
	fingerprint string // of the job, stored in every record's provenance
	log         *slog.Logger
	extract     func(text, finishReason string) (answer string, ok bool) // defaultExtract, or a test's hook
	// causes counts why problems failed and why verdicts could not be had,
	// by stage, for the report's most common cause.
	causes *causes
	// seeds, when set, makes the engine decompose saturated items
	// (decomposeStages) instead of running the style's stages.
	seeds Seeds
	// judges are the judges of the judge and empirical stages, by stage:
	// the stage's own model, or its panel's judges (newJudges).
	judges map[string][]judgeAt
}

// outcome is what processing one problem produced: a record, a failure, or
// (err) a condition that stops the run, after which the problem stays
// pending. sampled counts its rollouts once they were all sampled.
type outcome struct {
	problem source.Problem
	record  *schema.Record
	failure *problemFailure
	err     error
	sampled rolloutTally
	usage   *usage // what the problem's requests cost, by stage (distill plan reads it)
}

// problemFailure is a per-problem failure: data, not an error that stops the run.
type problemFailure struct {
	stage, reason string
	attempts      int
	transient     bool      // the endpoint ran out of retries: not the problem's fault
	llmReason     string    // the llm error's reason ("refused", "timeout", ...), if any
	rejected      *Rejected // what report.json's sample keeps of a unit left out (its rollouts); nil: its id and reason
}

// rolloutTally counts sampled rollouts.
type rolloutTally struct{ total, correct int64 }

// usage adds up what a record cost.
type usage struct {
	mu      sync.Mutex
	u       schema.Usage
	stage   string                  // the stage whose requests are being added
	byStage map[string]schema.Usage // u, split by stage
}

// enter makes the responses added from now on count to stage.
func (u *usage) enter(stage string) {
	u.mu.Lock()
	u.stage = stage
	u.mu.Unlock()
}

// add counts one answer. The record's usage counts as llm.StageStats does
// (the one definition of a request): a request is one sent to the endpoint,
// with its tokens and cost; an answer read from the cache is counted apart
// (CachedRequests) and adds nothing else. byStage counts every answer the
// problem needed, read or sent, since distill plan projects from it what a
// run with an empty cache sends.
func (u *usage) add(r *llm.Response) { u.addAs("", r) }

// addAs counts one answer as add does, split by stage under key instead
// of the current stage when key is not empty (a panel judge's answers,
// which distill plan prices at the judge's model).
func (u *usage) addAs(key string, r *llm.Response) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if key == "" {
		key = u.stage
	}
	if r.Cached {
		u.u.CachedRequests++
	} else {
		u.u.Requests++
		u.u.PromptTokens += r.PromptTokens
		u.u.CompletionTokens += r.CompletionTokens
		u.u.CostUSD += r.CostUSD
	}
	if u.byStage == nil {
		u.byStage = map[string]schema.Usage{}
	}
	s := u.byStage[key]
	s.Requests++
	s.PromptTokens += r.PromptTokens
	s.CompletionTokens += r.CompletionTokens
	s.CostUSD += r.CostUSD
	u.byStage[key] = s
}

// unit is one problem or passage on its way through its style's stages:
// what the stages so far made of it.
type unit struct {
	p        source.Problem
	u        usage
	rollouts []schema.Rollout
	items    []schema.Item
	grounded *schema.Grounded // the grounded style's payload
	// judgeCutLogged: the passage's cut for the judge was logged.
	judgeCutLogged bool
	// leftOut ends the unit without a record and without an error: a
	// selecting stage (select, quality) left it out, with the reason.
	leftOut *problemFailure
	// panel collects every judge's verdicts for the record's Panel, when
	// the job asks panels or shuffles the judges' orders (recordPanel).
	panel *schema.Panel
}

// stage is one step of a style: its name (in failures.jsonl and the
// report), whether the job runs it, and what it does to the unit. A stage
// that sends no request (a check) is not timed.
type stage struct {
	name  string
	on    func(*job.Job) bool // nil: always
	check bool
	run   func(e *engine, ctx context.Context, w *unit) error
}

// stagesOf is the stage list of a style; the engine runs every style's
// list the same way.
func stagesOf(style string) []stage {
	if style == schema.StyleGrounded {
		return groundedStages
	}
	return mathStages
}

// mathStages are the stages of the srar and factual_process styles.
// StageNames are the names of a style's stages, in pipeline order.
func StageNames(style string) []string {
	var out []string
	for _, st := range stagesOf(style) {
		out = append(out, st.name)
	}
	return out
}

// RequestStageNames are the stages of the job's style that the job runs
// and that send requests, in pipeline order.
func RequestStageNames(jb *job.Job) []string {
	var out []string
	for _, st := range stagesOf(jb.Style) {
		if st.check || (st.on != nil && !st.on(jb)) {
			continue
		}
		out = append(out, st.name)
	}
	return out
}

var mathStages = []stage{
	{name: job.StageRollout, run: func(e *engine, ctx context.Context, w *unit) (err error) {
		w.rollouts, err = e.rollouts(ctx, w.p, &w.u)
		return err
	}},
	{name: job.StageSelect, check: true, run: func(e *engine, _ context.Context, w *unit) error {
		if w.leftOut = e.selectProblem(w.rollouts); w.leftOut != nil {
			w.leftOut.rejected = rejectedOf(w.p, job.StageSelect, w.leftOut.reason, w.rollouts)
		}
		return nil
	}},
	{name: job.StageDistill, run: func(e *engine, ctx context.Context, w *unit) (err error) {
		w.items, err = e.distill(ctx, w.p, w.rollouts, &w.u)
		return err
	}},
	{name: job.StageJudge, on: job.JudgeOn, run: (*engine).judge},
	{name: job.StageEmpirical, on: job.EmpiricalOn, run: (*engine).empirical},
}

// process runs the stages of the job's style over p. A panic anywhere in
// it, its fan-out goroutines included, becomes a failure of this problem.
func (e *engine) process(ctx context.Context, p source.Problem) (out outcome) {
	out.problem = p
	w := &unit{p: p, panel: e.recordPanel()}
	current := ""
	defer func() {
		out.sampled = tally(w.rollouts)
		if r := recover(); r != nil {
			out.record, out.err = nil, nil
			out.failure = e.failure(p, current, newPanicError(r))
		}
	}()
	out.usage = &w.u
	for _, st := range e.stages() {
		if st.on != nil && !st.on(e.job) {
			continue
		}
		current = st.name
		w.u.enter(st.name)
		start := time.Now()
		err := st.run(e, ctx, w)
		if !st.check {
			e.stageTimes.add(st.name, time.Since(start))
		}
		switch {
		case err != nil && effectOf(err) != effectProblem:
			out.err = err
			return out
		case err != nil:
			out.failure = e.failure(p, st.name, err)
			return out
		case w.leftOut != nil:
			out.failure = w.leftOut
			return out
		}
	}
	if w.grounded != nil {
		out.record = e.groundedRecord(w)
	} else {
		out.record = e.record(p, w.rollouts, w.items, w.u.u)
		out.record.Panel = w.panel
		e.stampDecompose(out.record)
	}
	return out
}

// failure describes err as a failure of p at stage. A recovered panic is
// logged with its stack.
func (e *engine) failure(p source.Problem, stage string, err error) *problemFailure {
	f := &problemFailure{stage: stage, reason: err.Error(), attempts: 1}
	var pe *panicError
	if errors.As(err, &pe) {
		e.log.Error("internal error while processing a problem; it is recorded as failed",
			"id", p.ID, "source", fmt.Sprintf("%s:%d", p.File, p.Line), "stage", stage, "panic", pe.value, "stack", string(pe.stack))
		f.stage = job.StageInternal
		f.reason = fmt.Sprintf("internal error in the %s stage: %v (the stack is in the log)", stage, pe.value)
		return f
	}
	var parseErr *llm.ParseError
	if errors.As(err, &parseErr) {
		f.attempts = parseErr.Attempts
	}
	var le *llm.Error
	if errors.As(err, &le) {
		f.attempts = max(f.attempts, le.Attempts)
		f.transient = le.Class == llm.ClassRetryable
		f.llmReason = le.Reason
	}
	return f
}

func tally(rollouts []schema.Rollout) rolloutTally {
	t := rolloutTally{total: int64(len(rollouts))}
	for _, r := range rollouts {
		if r.Correct {
			t.correct++
		}
	}
	return t
}

// selectProblem leaves out a problem without enough correct and flawed
// rollouts to contrast; it returns nil when the problem goes on.
func (e *engine) selectProblem(rollouts []schema.Rollout) *problemFailure {
	t := tally(rollouts)
	nIncorrect := t.total - t.correct
	sel := e.job.Selection
	if t.correct >= int64(sel.MinCorrect) && nIncorrect >= int64(sel.MinIncorrect) {
		return nil
	}
	return &problemFailure{stage: job.StageSelect, attempts: 1, reason: fmt.Sprintf(
		"left out by selection: %d of %d rollouts correct, %d flawed (need at least %d correct and %d flawed)",
		t.correct, t.total, nIncorrect, sel.MinCorrect, sel.MinIncorrect)}
}

// record assembles the corpus record of a problem that passed every stage.
func (e *engine) record(p source.Problem, rollouts []schema.Rollout, items []schema.Item, u schema.Usage) *schema.Record {
	t := tally(rollouts)
	rec := &schema.Record{
		ID:       p.ID,
		Source:   p.Source,
		Split:    job.SplitOf(p.ID, e.job.Split),
		Problem:  p.Text,
		Answer:   p.Answer,
		Style:    e.job.Style,
		Rubric:   items,
		Rollouts: rollouts,
		NCorrect: int32(t.correct),
		PassRate: float64(t.correct) / float64(len(rollouts)),
		Provenance: schema.Provenance{
			RolloutModel:    e.job.Rollout.Model,
			DistillModel:    e.job.Distill.Model,
			RolloutTemplate: e.prompts.Hash(prompts.Rollout),
			DistillTemplate: e.prompts.Hash(job.DistillTemplate(e.job)),
			SpecVersion:     schema.SpecVersion,
			ToolVersion:     e.toolVersion,
			JobFingerprint:  e.fingerprint,
			CreatedAt:       time.Now().UTC().Truncate(time.Millisecond),
		},
		Usage: u,
	}
	if p.Reference != "" {
		rec.Reference = ptr(p.Reference)
	}
	if e.job.Judge.Enabled {
		rec.Provenance.JudgeModel = ptr(stageModel(e.job, job.StageJudge, e.job.Judge.Model))
		rec.Provenance.JudgeTemplate = ptr(e.prompts.Hash(job.JudgeTemplate(e.job)))
		rec.Provenance.JudgeSeed = e.job.Judge.Sent()
	}
	if e.job.Empirical.Enabled {
		rec.Provenance.EmpiricalModel = ptr(stageModel(e.job, job.StageEmpirical, e.job.Empirical.Model))
		rec.Provenance.SatisfyTemplate = ptr(e.prompts.Hash(prompts.Satisfy))
		rec.Provenance.Alpha = ptr(e.job.Empirical.Alpha)
		rec.Provenance.EmpiricalSeed = e.job.Empirical.Sent()
	}
	return rec
}

// admit waits until the endpoint of the style's first stage can take one
// more unit's first requests (a problem's rollouts, a passage's analysis);
// see llm.Client.Admit.
func (e *engine) admit(ctx context.Context) (context.Context, func(), error) {
	if e.job.Style == schema.StyleGrounded {
		return e.clients[job.StageDistill].Admit(ctx, 1)
	}
	r := e.job.Rollout
	return e.clients[job.StageRollout].Admit(ctx, (r.N+r.PerRequest-1)/r.PerRequest)
}

func request(stage string, ep job.Endpoint, s job.Sampling, msgs []llm.Message) llm.Request {
	return llm.Request{Stage: stage, Model: ep.Model, Messages: msgs, Temperature: s.Temperature, TopP: s.TopP, MaxTokens: s.MaxTokens}
}

// askParsed sends req through client.ChatParsed, adding every response to u
// and showing an unparsable reply back to the model up to repairs times.
func (e *engine) askParsed(ctx context.Context, client *llm.Client, req llm.Request, repairs int, what string, u *usage, parse func(string) error) error {
	return client.ChatParsed(ctx, req, llm.Ask{
		What: what, Repairs: repairs, Parse: parse, Repair: e.prompts.RepairMessages, OnResponse: u.add,
		RepairsOnline: e.job.Batch.Repairs == job.ModeOnline,
	})
}

// defaultExtract extracts a rollout's final answer, telling the verifier how the rollout
// ended: its finish reason, not a guess, says whether it was cut off.
func defaultExtract(text, finishReason string) (string, bool) {
	a, _, ok := verify.ExtractWith(text, verify.Options{FinishReason: finishReason})
	return a, ok
}

func ptr[T any](v T) *T { return &v }
