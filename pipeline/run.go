// Package pipeline turns problems into corpus records: it reads the job and
// the input, samples and verifies rollouts, selects problems, distills and
// judges rubrics, measures empirical validity, and drives the resumable run
// loop that writes records into the run directory.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// ToolVersion is the toolkit's version, set at build time with
// -ldflags "-X github.com/rubricforge/rubricforge/pipeline.ToolVersion=v1.2.3".
var ToolVersion = "dev"

// ErrJobChanged is returned when a run directory was made by a different job.
var ErrJobChanged = errors.New("the job differs from the one that made this run directory")

// Options are the settings of one invocation that are not part of the job.
type Options struct {
	Force       bool // run even if the job changed
	RetryFailed bool // retry problems recorded in failures.jsonl
	Logger      *slog.Logger
	Status      io.Writer     // progress output, normally stderr; nil for none
	Terminal    bool          // Status is a terminal: draw a progress bar
	StatusEvery time.Duration // plain status line interval when not a terminal (default 5s)
	Getenv      func(string) string
	// HTTPClient, when set, carries every endpoint's requests (benchmarks use
	// it to reach an in-process simulated endpoint); nil means a tuned client
	// per endpoint.
	HTTPClient *http.Client
}

// Run builds or resumes the corpus of job. It returns the final report
// (also written to RUN/report.json) and an error only when the run could not
// go on: a bad job, a locked or changed run directory, a fatal endpoint error
// or a disk error. Per-problem failures are in the report, not in the error.
func Run(ctx context.Context, job Job, opt Options) (*Report, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	job.Normalize()
	if err := job.Validate(); err != nil {
		return nil, err
	}
	ps, err := prompts.Load(job.PromptsDir)
	if err != nil {
		return nil, err
	}
	job.TemplateHashes = usedTemplates(&job, ps)
	fingerprint := job.Fingerprint(job.TemplateHashes)

	run, err := corpus.Open(job.Out, corpus.Options{ShardRows: job.Output.ShardRows, ToolVersion: ToolVersion, Logger: log})
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			run.Close()
		}
	}()
	if prev := run.Manifest().JobFingerprint; prev != "" && prev != fingerprint {
		change := describeChange(job.Out, &job)
		if !opt.Force {
			return nil, fmt.Errorf("%w (%s): %s; use a new --out, restore the old settings, or pass --force to mix them", ErrJobChanged, job.Out, change)
		}
		log.Warn("job changed; continuing because of --force", "changed", change)
	}
	run.SetFingerprint(fingerprint)
	jobYAML, err := job.YAML()
	if err != nil {
		return nil, fmt.Errorf("encoding job: %w", err)
	}
	if err := fsys.WriteFileAtomic(fsys.OS, corpus.Layout{Dir: job.Out}.Job(), jobYAML, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", corpus.JobName, err)
	}

	prev, _, err := ReadReport(job.Out)
	if err != nil {
		log.Warn("ignoring unreadable report.json; corpus figures will be recomputed", "err", err)
	}
	stats := corpusStats{Rows: prev.CorpusRows, Rollouts: prev.Rollouts, Validity: prev.Validity}
	if stats.Rows != run.Manifest().Rows {
		if stats, err = scanCorpusStats(job.Out); err != nil {
			return nil, fmt.Errorf("reading the corpus for its figures: %w", err)
		}
	}

	prices := map[string]llm.Price{}
	for model, p := range job.Prices {
		prices[model] = llm.Price{PromptPerMTok: p.Prompt, CompletionPerMTok: p.Completion}
	}
	meter := llm.NewMeter(prices, llm.Budget{MaxCostUSD: job.Budget.MaxCostUSD, MaxTokens: job.Budget.MaxTokens})
	meter.Restore(prev.LLM)
	cachePath := job.Cache
	if cachePath == "" {
		cachePath = corpus.Layout{Dir: job.Out}.Cache()
	}
	cache, err := llm.OpenCache(cachePath)
	if err != nil {
		return nil, err
	}
	defer cache.Close()
	clients, closeClients, err := newClients(&job, opt, cache, meter, log)
	if err != nil {
		return nil, err
	}
	defer closeClients()

	l := &loop{
		job: &job, opt: opt, log: log, run: run, meter: meter, stats: stats,
		eng: &engine{job: &job, prompts: ps, clients: clients, stats: newSessionStats(), toolVers: ToolVersion, fingerprint: fingerprint},
		report: Report{
			Status: StatusRunning, SpecVersion: schema.SpecVersion, ToolVersion: ToolVersion,
			JobFingerprint: fingerprint, Started: time.Now().UTC(),
		},
	}
	runErr := l.loop(ctx)
	if err := run.Commit(); err != nil && runErr == nil {
		runErr = fmt.Errorf("writing the last shard: %w", err)
	}
	l.finish(runErr)
	if err := run.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("closing the run: %w", err)
		l.report.Status, l.report.StopReason = StatusFailed, runErr.Error()
	}
	closed = true
	if err := writeReport(job.Out, &l.report); err != nil && runErr == nil {
		runErr = fmt.Errorf("writing report: %w", err)
	}
	return &l.report, runErr
}

// usedTemplates is the hash of every template this job sends.
func usedTemplates(job *Job, ps *prompts.Set) map[string]string {
	names := []string{prompts.Rollout, prompts.Repair}
	if job.Style == schema.StyleFactualProcess {
		names = append(names, prompts.DistillFactualProcess)
	} else {
		names = append(names, prompts.DistillSRaR)
	}
	if job.Judge.Enabled {
		if job.Judge.Mode == "item" {
			names = append(names, prompts.JudgeItem)
		} else {
			names = append(names, prompts.JudgeBatch)
		}
	}
	if job.Empirical.Enabled {
		names = append(names, prompts.Satisfy)
	}
	out := map[string]string{}
	for _, n := range names {
		out[n] = ps.Hash(n)
	}
	return out
}

// describeChange compares the job with RUN/job.yaml, field by field.
func describeChange(dir string, job *Job) string {
	b, err := os.ReadFile(corpus.Layout{Dir: dir}.Job())
	if err != nil {
		return "the previous job.yaml is unreadable, so what changed is unknown"
	}
	old := DefaultJob()
	if err := yaml.Unmarshal(b, &old); err != nil {
		return "the previous job.yaml is unreadable, so what changed is unknown"
	}
	before, after := old.FingerprintFields(old.TemplateHashes), job.FingerprintFields(job.TemplateHashes)
	var changes []string
	for _, k := range sortedKeys(after) {
		if before[k] != after[k] {
			changes = append(changes, fmt.Sprintf("%s was %q, now %q", k, before[k], after[k]))
		}
	}
	for _, k := range sortedKeys(before) {
		if _, ok := after[k]; !ok {
			changes = append(changes, fmt.Sprintf("%s was %q, now unused", k, before[k]))
		}
	}
	if len(changes) == 0 {
		return "the fingerprint differs (different tool spec version?)"
	}
	return strings.Join(changes, "; ")
}

// newClients makes one client per distinct endpoint and key, shared by the
// stages that use it, so each endpoint has one rate controller.
func newClients(job *Job, opt Options, cache *llm.Cache, meter *llm.Meter, log *slog.Logger) (map[string]*llm.Client, func(), error) {
	byEndpoint := map[string]*llm.Client{}
	clients := map[string]*llm.Client{}
	stages := map[string]Endpoint{StageRollout: job.Rollout.Endpoint, StageDistill: job.Distill.Endpoint, StageJudge: job.Judge.Endpoint, StageEmpirical: job.Empirical.Endpoint}
	for _, stage := range sortedKeys(stages) {
		ep := stages[stage]
		key := fmt.Sprintf("%s\x00%s\x00%v", ep.BaseURL, ep.APIKeyEnv, ep.LegacyMaxTokens)
		if c, ok := byEndpoint[key]; ok {
			clients[stage] = c
			continue
		}
		apiKey := ""
		if ep.APIKeyEnv != "" {
			apiKey = opt.Getenv(ep.APIKeyEnv)
			if apiKey == "" {
				log.Info("no API key set; sending requests without one", "endpoint", ep.BaseURL, "env", ep.APIKeyEnv)
			}
		}
		c, err := llm.NewClient(llm.Endpoint{BaseURL: ep.BaseURL, APIKey: apiKey}, llm.Options{
			MaxInFlight:       job.Limits.Concurrency,
			RequestsPerMinute: job.Limits.RequestsPerMinute,
			TokensPerMinute:   job.Limits.TokensPerMinute,
			AttemptTimeout:    job.Limits.AttemptTimeout,
			MaxAttempts:       job.Limits.MaxAttempts,
			BackoffMax:        job.Limits.BackoffMax,
			HTTPClient:        opt.HTTPClient,
			LegacyMaxTokens:   ep.LegacyMaxTokens,
			Logger:            log,
		}, cache, meter)
		if err != nil {
			return nil, nil, fmt.Errorf("endpoint for %s: %w", stage, err)
		}
		byEndpoint[key] = c
		clients[stage] = c
	}
	return clients, func() {
		for _, c := range byEndpoint {
			c.Close()
		}
	}, nil
}

// loop is the state of one run session.
type loop struct {
	job    *Job
	opt    Options
	log    *slog.Logger
	run    *corpus.Run
	meter  *llm.Meter
	eng    *engine
	stats  corpusStats
	report Report

	// counters shared with the reader and the workers
	inputRows, badLines, duplicates, unique    atomic.Int64
	alreadyDone, skippedFailed, skippedLeftOut atomic.Int64
	inFlight                                   atomic.Int64
	readDone                                   atomic.Bool

	// owned by the writer (the loop goroutine)
	doneSession, failedSession, leftOutSession int64
	transientRun                               int // problems failed in a row on a failing endpoint
	failuresByStage                            map[string]int64
	badSample                                  []InputError
	badMu                                      sync.Mutex
	started                                    time.Time
}

const badLineSample = 20

// endpointFailureLimit is how many problems in a row may run out of retries
// on transient endpoint errors before the run stops as failed.
const endpointFailureLimit = 50

func (l *loop) loop(ctx context.Context) error {
	l.started = time.Now()
	l.failuresByStage = map[string]int64{}
	previousFailures := l.run.Failures()
	for _, f := range previousFailures {
		if !l.opt.RetryFailed && !f.Transient {
			l.failuresByStage[f.Stage]++
		}
	}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	var stopOnce sync.Once
	var stopReason atomic.Value
	stopFeeding := make(chan struct{})
	stop := func(reason string) {
		stopOnce.Do(func() { stopReason.Store(reason); close(stopFeeding) })
	}
	if l.meter.Exhausted() {
		stop("budget reached before the run started: " + l.budgetString())
	}

	work := make(chan Problem, l.job.Limits.ProblemsInFlight)
	results := make(chan outcome, l.job.Limits.ProblemsInFlight)
	var readErr error
	go func() {
		defer close(work)
		type seenAt struct {
			content uint64
			where   string
		}
		seen := map[string]seenAt{}
		readErr = ReadProblems(runCtx, l.job.Input, func(p Problem) error {
			l.inputRows.Add(1)
			content := xxhash.Sum64String(p.Text + "\x00" + p.Answer)
			if s, dup := seen[p.ID]; dup {
				if s.content != content {
					l.bad(&InputError{p.File, p.Line, fmt.Sprintf("id %q is already used by %s for a different problem", p.ID, s.where)})
				} else {
					l.duplicates.Add(1)
				}
				return nil
			}
			seen[p.ID] = seenAt{content, fmt.Sprintf("%s:%d", p.File, p.Line)}
			l.unique.Add(1)
			if l.run.Done(p.ID) {
				l.alreadyDone.Add(1)
				return nil
			}
			if f, failed := previousFailures[p.ID]; failed && !l.opt.RetryFailed && !f.Transient {
				if f.Stage == StageSelect {
					l.skippedLeftOut.Add(1)
				} else {
					l.skippedFailed.Add(1)
				}
				return nil
			}
			select {
			case <-stopFeeding:
				return nil // keep counting the input; the problem stays pending
			default:
			}
			select {
			case work <- p:
				return nil
			case <-stopFeeding:
				return nil
			case <-runCtx.Done():
				return runCtx.Err()
			}
		}, l.bad)
		l.readDone.Store(true)
	}()

	var wg sync.WaitGroup
	for range l.job.Limits.ProblemsInFlight {
		wg.Go(func() {
			for p := range work {
				select {
				case <-stopFeeding:
					continue
				default:
				}
				if runCtx.Err() != nil {
					continue
				}
				l.inFlight.Add(1)
				o := l.eng.process(runCtx, p)
				l.inFlight.Add(-1)
				results <- o
			}
		})
	}
	go func() { wg.Wait(); close(results) }()

	progress := newProgress(l.opt.Status, l.opt.Terminal, l.opt.StatusEvery)
	defer progress.finish()
	checkpoint := time.NewTicker(l.job.Output.CheckpointInterval)
	defer checkpoint.Stop()
	statusTick := time.NewTicker(progress.interval())
	defer statusTick.Stop()

	var fatal error
	for {
		select {
		case o, ok := <-results:
			if !ok {
				results = nil
				break
			}
			if err := l.take(o, stop); err != nil && fatal == nil {
				fatal = err
				cancelRun(err)
			}
		case <-checkpoint.C:
			if err := l.checkpoint(); err != nil && fatal == nil {
				fatal = err
				cancelRun(err)
			}
		case <-statusTick.C:
			progress.update(l.snapshotLine())
		}
		if results == nil {
			break
		}
	}
	progress.update(l.snapshotLine())
	if fatal == nil && readErr != nil && !errors.Is(readErr, context.Canceled) {
		fatal = fmt.Errorf("reading input: %w", readErr)
	}
	if fatal != nil {
		return fatal
	}
	if r, ok := stopReason.Load().(string); ok {
		l.report.StopReason = r
	}
	if ctx.Err() != nil {
		l.report.StopReason = "interrupted"
	}
	return nil
}

// take records one outcome. It returns an error only when the run must end.
func (l *loop) take(o outcome, stop func(string)) error {
	switch {
	case o.err != nil:
		if errors.Is(o.err, llm.ErrBudgetExhausted) || llm.ClassOf(o.err) == llm.ClassBudget {
			stop("budget reached: " + l.budgetString())
			return nil
		}
		if errors.Is(o.err, context.Canceled) || errors.Is(o.err, context.DeadlineExceeded) || llm.ClassOf(o.err) == llm.ClassCanceled {
			return nil
		}
		return fmt.Errorf("problem %s: %w", o.problem.ID, o.err)
	case o.record != nil:
		if err := l.run.Append(o.record); err != nil {
			return fmt.Errorf("writing record %s: %w", o.record.ID, err)
		}
		l.stats.add(o.record)
		l.doneSession++
		l.transientRun = 0
	case o.failure != nil:
		f := corpus.Failure{
			ID: o.problem.ID, Stage: o.failure.stage, Reason: o.failure.reason, Attempts: o.failure.attempts,
			Time: time.Now().UTC(), Source: fmt.Sprintf("%s:%d", o.problem.File, o.problem.Line), Transient: o.failure.transient,
		}
		if err := l.run.RecordFailure(f); err != nil {
			return fmt.Errorf("recording failure of %s: %w", f.ID, err)
		}
		l.failuresByStage[f.Stage]++
		if f.Stage == StageSelect {
			l.leftOutSession++
		} else {
			l.failedSession++
			l.log.Debug("problem failed", "id", f.ID, "stage", f.Stage, "reason", f.Reason)
		}
		if f.Transient {
			l.transientRun++
			if l.transientRun >= endpointFailureLimit {
				return fmt.Errorf("the endpoint keeps failing: %d problems in a row ran out of retries (last: %s); finished work is kept, and a plain resume retries these problems once the endpoint is back", l.transientRun, f.Reason)
			}
		}
	}
	return nil
}

func (l *loop) bad(e *InputError) {
	l.badLines.Add(1)
	l.log.Warn("skipping bad input line", "file", e.File, "line", e.Line, "reason", e.Reason)
	l.badMu.Lock()
	if len(l.badSample) < badLineSample {
		l.badSample = append(l.badSample, *e)
	}
	l.badMu.Unlock()
}

func (l *loop) budgetString() string {
	s := l.meter.Snapshot().Total
	return fmt.Sprintf("spent $%.4f and %d tokens (max_cost_usd %g, max_tokens %d)",
		s.CostUSD, s.PromptTokens+s.CompletionTokens, l.job.Budget.MaxCostUSD, l.job.Budget.MaxTokens)
}

func (l *loop) checkpoint() error {
	if err := l.run.Commit(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	l.fillReport()
	return writeReport(l.job.Out, &l.report)
}

// fillReport brings the report up to date from the counters.
func (l *loop) fillReport() {
	r := &l.report
	now := time.Now().UTC()
	r.Updated = now
	r.ElapsedSeconds = now.Sub(r.Started).Seconds()
	prevFailed := l.skippedFailed.Load()
	prevLeftOut := l.skippedLeftOut.Load()
	pc := ProblemCounts{
		InputRows: l.inputRows.Load(), BadLines: l.badLines.Load(), Duplicates: l.duplicates.Load(),
		Unique: l.unique.Load(), AlreadyDone: l.alreadyDone.Load(), SkippedFailed: prevFailed + prevLeftOut,
		DoneThisSession: l.doneSession, FailedThisSession: l.failedSession + l.leftOutSession,
	}
	pc.Done = pc.AlreadyDone + l.doneSession
	pc.Failed = prevFailed + l.failedSession
	pc.LeftOut = prevLeftOut + l.leftOutSession
	pc.Pending = pc.Unique - pc.Done - pc.Failed - pc.LeftOut
	r.Problems = pc
	r.FailuresByStage = copyMap(l.failuresByStage)
	l.badMu.Lock()
	r.BadLines = append([]InputError(nil), l.badSample...)
	l.badMu.Unlock()
	r.CorpusRows, r.Rollouts, r.Validity = l.stats.Rows, l.stats.Rollouts, l.stats.Validity
	r.StageSeconds = l.eng.stats.snapshot()
	r.LLM = l.meter.Snapshot()
	r.Repairs = map[string]int64{}
	for stage, s := range r.LLM.Stages {
		if s.Repairs > 0 {
			r.Repairs[stage] = s.Repairs
		}
	}
	r.Shards = len(l.run.Manifest().Shards)
	processed := float64(l.doneSession + l.failedSession + l.leftOutSession)
	r.ProblemsPerMin, r.ETASeconds = 0, nil
	if mins := now.Sub(l.started).Minutes(); mins > 0 && processed > 0 {
		r.ProblemsPerMin = processed / mins
		if l.readDone.Load() {
			eta := float64(pc.Pending) / r.ProblemsPerMin * 60
			r.ETASeconds = &eta
		}
	}
}

func (l *loop) finish(runErr error) {
	l.fillReport()
	r := &l.report
	r.ETASeconds = nil
	switch {
	case runErr != nil:
		r.Status, r.StopReason = StatusFailed, runErr.Error()
	case r.StopReason != "":
		r.Status = StatusStopped
	default:
		r.Status = StatusFinished
	}
	if r.Status == StatusFinished && r.Problems.Pending != 0 {
		r.Status, r.StopReason = StatusStopped, fmt.Sprintf("%d problems were not processed", r.Problems.Pending)
	}
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
