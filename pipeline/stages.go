package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/verify"
)

// Stage names, as they appear in failures.jsonl and report.json.
const (
	StageRollout   = "rollout"
	StageVerify    = "verify"
	StageSelect    = "select"
	StageDistill   = "distill"
	StageJudge     = "judge"
	StageEmpirical = "empirical"
)

// problemFailure is a per-problem failure: data, not an error that stops the run.
type problemFailure struct {
	stage, reason string
	attempts      int
	transient     bool // the endpoint ran out of retries: not the problem's fault
}

// engine turns one problem into a record or a failure.
type engine struct {
	job         *Job
	prompts     *prompts.Set
	clients     map[string]*llm.Client // by stage
	stats       *sessionStats
	toolVers    string
	fingerprint string // of the job, stored in every record's provenance
}

// outcome is what processing one problem produced. err is set only for
// conditions that stop the run (fatal endpoint errors, budget, cancellation);
// the problem then stays pending.
type outcome struct {
	problem Problem
	record  *schema.Record
	failure *problemFailure
	err     error
}

// usage adds up what a record cost.
type usage struct {
	mu sync.Mutex
	u  schema.Usage
}

func (u *usage) add(r *llm.Response) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.u.Requests++
	if r.Cached {
		u.u.CachedRequests++
	}
	u.u.PromptTokens += r.PromptTokens
	u.u.CompletionTokens += r.CompletionTokens
	u.u.CostUSD += r.CostUSD
}

// runLevel reports whether err must stop the run instead of failing the problem.
func runLevel(err error) bool {
	if errors.Is(err, llm.ErrBudgetExhausted) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var le *llm.Error
	if errors.As(err, &le) {
		switch le.Class {
		case llm.ClassFatal, llm.ClassCanceled, llm.ClassBudget:
			return true
		}
	}
	return false
}

func (e *engine) process(ctx context.Context, p Problem) (out outcome) {
	out.problem = p
	defer func() {
		if r := recover(); r != nil {
			out.record = nil
			out.failure = &problemFailure{stage: "internal", reason: fmt.Sprintf("panic: %v", r)}
		}
	}()
	var u usage
	fail := func(stage string, err error) outcome {
		if runLevel(err) {
			out.err = err
			return out
		}
		attempts := 1
		var pe *llm.ParseError
		if errors.As(err, &pe) {
			attempts = pe.Attempts
		}
		transient := false
		var le *llm.Error
		if errors.As(err, &le) {
			attempts = max(attempts, le.Attempts)
			transient = le.Class == llm.ClassRetryable
		}
		out.failure = &problemFailure{stage: stage, reason: err.Error(), attempts: attempts, transient: transient}
		return out
	}

	start := time.Now()
	rollouts, err := e.rollouts(ctx, p, &u)
	e.stats.stageTime(StageRollout, time.Since(start))
	if err != nil {
		return fail(StageRollout, err)
	}
	nCorrect, nIncorrect := 0, 0
	for _, r := range rollouts {
		if r.Correct {
			nCorrect++
		} else {
			nIncorrect++
		}
	}
	if nCorrect < e.job.Selection.MinCorrect || nIncorrect < e.job.Selection.MinIncorrect {
		out.failure = &problemFailure{stage: StageSelect, attempts: 1, reason: fmt.Sprintf(
			"left out by selection: %d of %d rollouts correct, %d flawed (need at least %d correct and %d flawed)",
			nCorrect, len(rollouts), nIncorrect, e.job.Selection.MinCorrect, e.job.Selection.MinIncorrect)}
		return out
	}

	start = time.Now()
	items, err := e.distill(ctx, p, rollouts, &u)
	e.stats.stageTime(StageDistill, time.Since(start))
	if err != nil {
		return fail(StageDistill, err)
	}
	if e.job.Judge.Enabled {
		start = time.Now()
		items, err = e.judge(ctx, p, items, &u)
		e.stats.stageTime(StageJudge, time.Since(start))
		if err != nil {
			return fail(StageJudge, err)
		}
	}
	if e.job.Empirical.Enabled {
		start = time.Now()
		err = e.empirical(ctx, p, rollouts, items, &u)
		e.stats.stageTime(StageEmpirical, time.Since(start))
		if err != nil {
			return fail(StageEmpirical, err)
		}
	}

	rec := &schema.Record{
		ID:       p.ID,
		Source:   p.Source,
		Split:    SplitOf(p.ID, e.job.Split),
		Problem:  p.Text,
		Answer:   p.Answer,
		Style:    e.job.Style,
		Rubric:   items,
		Rollouts: rollouts,
		NCorrect: int32(nCorrect),
		PassRate: float64(nCorrect) / float64(len(rollouts)),
		Provenance: schema.Provenance{
			RolloutModel:    e.job.Rollout.Model,
			DistillModel:    e.job.Distill.Model,
			RolloutTemplate: e.prompts.Hash(prompts.Rollout),
			DistillTemplate: e.prompts.Hash(e.distillTemplate()),
			SpecVersion:     schema.SpecVersion,
			ToolVersion:     e.toolVers,
			JobFingerprint:  e.fingerprint,
			CreatedAt:       time.Now().UTC().Truncate(time.Millisecond),
		},
		Usage: u.u,
	}
	if p.Reference != "" {
		ref := p.Reference
		rec.Reference = &ref
	}
	if e.job.Judge.Enabled {
		rec.Provenance.JudgeModel = ptr(e.job.Judge.Model)
		rec.Provenance.JudgeTemplate = ptr(e.prompts.Hash(e.judgeTemplate()))
	}
	if e.job.Empirical.Enabled {
		rec.Provenance.EmpiricalModel = ptr(e.job.Empirical.Model)
		rec.Provenance.SatisfyTemplate = ptr(e.prompts.Hash(prompts.Satisfy))
		rec.Provenance.Alpha = ptr(e.job.Empirical.Alpha)
	}
	out.record = rec
	return out
}

func (e *engine) distillTemplate() string {
	if e.job.Style == schema.StyleFactualProcess {
		return prompts.DistillFactualProcess
	}
	return prompts.DistillSRaR
}

func (e *engine) judgeTemplate() string {
	if e.job.Judge.Mode == "item" {
		return prompts.JudgeItem
	}
	return prompts.JudgeBatch
}

func request(stage string, ep Endpoint, s Sampling, msgs []prompts.Message) llm.Request {
	return llm.Request{Stage: stage, Model: ep.Model, Messages: msgs, Temperature: s.Temperature, TopP: s.TopP, MaxTokens: s.MaxTokens}
}

// fanOut runs n calls concurrently and returns the first error, cancelling
// the others once one fails.
func fanOut(ctx context.Context, n int, call func(ctx context.Context, i int) error) error {
	if n == 1 {
		return call(ctx, 0)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		wg.Go(func() {
			if err := call(ctx, i); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	return first
}

// rollouts samples N solutions and verifies each against the ground truth.
func (e *engine) rollouts(ctx context.Context, p Problem, u *usage) ([]schema.Rollout, error) {
	msgs, err := e.prompts.RolloutMessages(p.Text)
	if err != nil {
		return nil, err
	}
	n, per := e.job.Rollout.N, e.job.Rollout.PerRequest
	out := make([]schema.Rollout, n)
	requests := (n + per - 1) / per
	client := e.clients[StageRollout]
	err = fanOut(ctx, requests, func(ctx context.Context, i int) error {
		first := i * per
		k := min(per, n-first)
		req := request(StageRollout, e.job.Rollout.Endpoint, e.job.Rollout.Sampling, msgs)
		req.N = k
		req.SampleIndex = first
		seed := e.job.Rollout.Seed + int64(first)
		req.Seed = &seed
		resp, err := client.Chat(ctx, req)
		if err != nil {
			return fmt.Errorf("samples %d-%d: %w", first, first+k-1, err)
		}
		u.add(resp)
		var tokens *int32
		if k == 1 {
			t := int32(min(resp.CompletionTokens, math.MaxInt32))
			tokens = &t
		}
		for j, c := range resp.Choices {
			out[first+j] = verifyRollout(int32(first+j), c, p.Answer, tokens)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

var stepHeader = regexp.MustCompile(`(?m)^[ \t]*#{2,4}[ \t]*Step[ \t]+\d+[ \t]*:`)

// verifyRollout extracts and checks a rollout's final answer. A rollout cut
// off by the token limit is never a clean correct answer.
func verifyRollout(index int32, c llm.Choice, gold string, tokens *int32) schema.Rollout {
	r := schema.Rollout{Index: index, Text: c.Content, FinishReason: c.FinishReason, CompletionTokens: tokens}
	ans, ok := verify.Extract(c.Content)
	if ok {
		r.ExtractedAnswer = ans
	}
	r.FormatOK = stepHeader.MatchString(c.Content) && strings.Contains(c.Content, "<answer>") && strings.Contains(c.Content, "</answer>")
	r.Correct = ok && c.FinishReason == "stop" && verify.Equal(gold, ans)
	return r
}

// countSteps counts the "### Step N:" headers of a solution.
func countSteps(text string) int { return len(stepHeader.FindAllStringIndex(text, -1)) }

// askParsed sends req through client.ChatParsed, adding every response to u
// and showing an unparsable reply back to the model up to repairs times.
func (e *engine) askParsed(ctx context.Context, client *llm.Client, req llm.Request, repairs int, what string, u *usage, parse func(string) error) error {
	return client.ChatParsed(ctx, req, llm.Ask{
		What: what, Repairs: repairs, Parse: parse, Repair: e.prompts.RepairMessages, OnResponse: u.add,
	})
}

// distill asks for the rubric in the job's style.
func (e *engine) distill(ctx context.Context, p Problem, rollouts []schema.Rollout, u *usage) ([]schema.Item, error) {
	var msgs []prompts.Message
	var err error
	maxChars := e.job.Distill.MaxSolutionChars
	if e.job.Style == schema.StyleFactualProcess {
		ref := p.Reference
		if ref == "" {
			for _, r := range rollouts {
				if r.Correct {
					ref = r.Text
					break
				}
			}
		}
		if ref == "" {
			return nil, errors.New("no reference solution: the input has none and no rollout is correct")
		}
		msgs, err = e.prompts.DistillFactualProcessMessages(p.Text, cut(ref, maxChars), p.Answer)
	} else {
		msgs, err = e.prompts.DistillSRaRMessages(p.Text, p.Answer, pickSolutions(rollouts, e.job.Distill.MaxSolutions, maxChars), e.job.Distill.MaxItems)
	}
	if err != nil {
		return nil, err
	}
	req := request(StageDistill, e.job.Distill.Endpoint, e.job.Distill.Sampling, msgs)
	var items []schema.Item
	parse := func(reply string) error {
		var perr error
		if e.job.Style == schema.StyleFactualProcess {
			items, perr = schema.ParseFactualProcess(reply)
		} else {
			var res schema.SRaRResult
			res, perr = schema.ParseSRaR(reply, schema.SRaROptions{MaxItems: e.job.Distill.MaxItems})
			items = res.Items
		}
		if perr != nil {
			return perr
		}
		return schema.CheckRubric(e.job.Style, items, e.job.Distill.MaxItems)
	}
	if err := e.askParsed(ctx, e.clients[StageDistill], req, e.job.Distill.RepairAttempts, "rubric", u, parse); err != nil {
		return nil, err
	}
	return items, nil
}

// pickSolutions chooses up to max solutions for the contrastive prompt,
// alternating correct and flawed ones so both sides are shown, and preferring
// flawed solutions that finished over ones cut off by the token limit.
func pickSolutions(rollouts []schema.Rollout, max, maxChars int) []prompts.Solution {
	var correct, flawed, truncated []schema.Rollout
	for _, r := range rollouts {
		switch {
		case r.Correct:
			correct = append(correct, r)
		case r.FinishReason == "length":
			truncated = append(truncated, r)
		default:
			flawed = append(flawed, r)
		}
	}
	flawed = append(flawed, truncated...)
	var picked []schema.Rollout
	for i := 0; len(picked) < max && (i < len(correct) || i < len(flawed)); i++ {
		if i < len(correct) {
			picked = append(picked, correct[i])
		}
		if i < len(flawed) && len(picked) < max {
			picked = append(picked, flawed[i])
		}
	}
	out := make([]prompts.Solution, len(picked))
	for i, r := range picked {
		out[i] = prompts.Solution{Index: i + 1, Correct: r.Correct, Text: cut(r.Text, maxChars)}
	}
	return out
}

// cut shortens s to at most n bytes on a rune boundary, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "\n[... cut ...]"
	end := n - len(mark)
	for end > 0 && !utf8RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// judge asks the validity judge about every item and stores the verdicts.
func (e *engine) judge(ctx context.Context, p Problem, items []schema.Item, u *usage) ([]schema.Item, error) {
	client := e.clients[StageJudge]
	js := e.job.Judge
	if js.Mode == "item" {
		err := fanOut(ctx, len(items), func(ctx context.Context, i int) error {
			msgs, err := e.prompts.JudgeItemMessages(p.Text, p.Answer, items[i])
			if err != nil {
				return err
			}
			req := request(StageJudge, js.Endpoint, js.Sampling, msgs)
			req.JSON = true
			return e.askParsed(ctx, client, req, js.RepairAttempts, fmt.Sprintf("validity verdict for item %d", items[i].ID), u, func(reply string) error {
				v, err := schema.ParseValidity(reply)
				if err == nil {
					items[i].Valid, items[i].ValidReason = &v.Valid, &v.Reason
				}
				return err
			})
		})
		if err != nil {
			return nil, err
		}
	} else {
		msgs, err := e.prompts.JudgeBatchMessages(p.Text, p.Answer, items)
		if err != nil {
			return nil, err
		}
		ids := itemIDs(items)
		req := request(StageJudge, js.Endpoint, js.Sampling, msgs)
		req.JSON = false // a JSON array is not a json_object response
		err = e.askParsed(ctx, client, req, js.RepairAttempts, "validity verdicts", u, func(reply string) error {
			vs, err := schema.ParseValidityBatch(reply, ids)
			if err != nil {
				return err
			}
			for i := range vs {
				items[i].Valid, items[i].ValidReason = &vs[i].Valid, &vs[i].Reason
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !js.DropInvalid {
		return items, nil
	}
	kept := items[:0:0]
	for _, it := range items {
		if it.Valid == nil || *it.Valid {
			it.ID = int32(len(kept) + 1)
			kept = append(kept, it)
		}
	}
	if err := schema.CheckRubric(e.job.Style, kept, e.job.Distill.MaxItems); err != nil {
		return nil, fmt.Errorf("rubric no longer holds after dropping %d invalid items: %w", len(items)-len(kept), err)
	}
	return kept, nil
}

func ptr[T any](v T) *T { return &v }

func itemIDs(items []schema.Item) []int32 {
	ids := make([]int32, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return ids
}

// empirical judges every rollout against the rubric and stores, per item, its
// satisfaction rate, the sign-aware correlation of satisfaction with
// correctness, and the RLCER rule (std > 0 and corr > alpha).
func (e *engine) empirical(ctx context.Context, p Problem, rollouts []schema.Rollout, items []schema.Item, u *usage) error {
	es := e.job.Empirical
	client := e.clients[StageEmpirical]
	ids := itemIDs(items)
	sat := make([][]schema.Satisfaction, len(rollouts))
	err := fanOut(ctx, len(rollouts), func(ctx context.Context, i int) error {
		r := rollouts[i]
		msgs, err := e.prompts.SatisfyMessages(p.Text, r.Text, r.ExtractedAnswer, items)
		if err != nil {
			return err
		}
		req := request(StageEmpirical, es.Endpoint, es.Sampling, msgs)
		steps := countSteps(r.Text)
		return e.askParsed(ctx, client, req, es.RepairAttempts, fmt.Sprintf("satisfaction verdicts for rollout %d", r.Index), u, func(reply string) error {
			s, err := schema.ParseSatisfaction(reply, ids, steps)
			sat[i] = s
			return err
		})
	})
	if err != nil {
		return err
	}
	for i := range rollouts {
		rollouts[i].Satisfaction = sat[i]
	}
	correct := make([]float64, len(rollouts))
	for i, r := range rollouts {
		if r.Correct {
			correct[i] = 1
		}
	}
	for j := range items {
		s := make([]float64, len(rollouts))
		for i := range rollouts {
			if sat[i][j].Satisfied {
				s[i] = 1
			}
		}
		m := ItemValidity(s, correct, items[j].Polarity, es.Alpha)
		items[j].SatRate, items[j].Corr, items[j].EmpiricalValid = m.SatRate, m.Corr, m.Valid
	}
	return nil
}

// Validity is an item's empirical validity over a group of rollouts.
type Validity struct {
	SatRate *float64
	Corr    *float64 // nil when correctness or satisfaction is constant
	Valid   *bool    // the RLCER rule; nil when correctness is constant
}

// ItemValidity measures one item over rollouts: sat[i] is 1 when rollout i
// satisfies the item, correct[i] 1 when it is correct. The correlation is
// sign-aware: for a PITFALL (polarity -1) satisfying it counts against, so a
// good pitfall correlates positively. The item is valid when its satisfaction
// varies (std > 0) and corr > alpha (RLCER).
func ItemValidity(sat, correct []float64, polarity int32, alpha float64) Validity {
	var v Validity
	n := float64(len(sat))
	if n == 0 {
		return v
	}
	rate := mean(sat)
	v.SatRate = &rate
	sdC := stddev(correct)
	if sdC == 0 {
		return v
	}
	sdS := stddev(sat)
	valid := false
	if sdS > 0 {
		corr := max(-1, min(1, covariance(sat, correct)/(sdS*sdC)))
		if polarity < 0 {
			corr = -corr
		}
		v.Corr = &corr
		valid = corr > alpha
	}
	v.Valid = &valid
	return v
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func stddev(x []float64) float64 { return math.Sqrt(covariance(x, x)) }

func covariance(x, y []float64) float64 {
	mx, my := mean(x), mean(y)
	s := 0.0
	for i := range x {
		s += (x[i] - mx) * (y[i] - my)
	}
	return s / float64(len(x))
}
