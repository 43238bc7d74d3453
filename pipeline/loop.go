package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/idmap"
	"github.com/rubricforge/rubricforge/llm"
)

// loop is one run session. The feeder reads the input and admits problems;
// the workers (ProblemsInFlight of them) process them; the collector, the
// goroutine that called loop, takes their outcomes in, writes records and
// failures, checkpoints, and decides when to stop (see verdict).
type loop struct {
	job         *job.Job
	opt         Options
	log         *slog.Logger
	run         *corpus.Run
	meter       *llm.Meter
	eng         *engine
	closeLLM    func()
	cache       *cache.Cache
	stats       corpusStats
	report      Report
	retryFailed bool // previous failures are retried: --retry-failed, or a changed job took an empty directory
	// stoppedAtBudget: the last session stopped at the budget, which is
	// not raised since (see stoppedAtBudget)
	stoppedAtBudget bool

	input        inputCounts          // shared with the feeder and the workers
	inputCounted bool                 // the input's rows were counted before the session (checkInput)
	skipped      *source.SkippedFiles // files of the input's directories that are not documents
	rejected     []Rejected           // the first problems left out, over every session (Report.Rejected)
	// warnedJSONObject: the log said that the endpoint refuses
	// response_format and what to set (once a session).
	warnedJSONObject bool
	part             partitionFilter
	stop             stopper

	// batch mode
	batcher  *llm.Batcher
	deferred int64               // times a problem's requests went into batches, this session
	only     map[string]struct{} // the problems the next pass runs (nil: every pending one)
	settled  settledSet          // problems this session made a record or a failure of
	// failedSampled is the rollouts of the failed problems the session's
	// sampled_rollouts started from (sampledOf): a problem run again
	// counts its new rollouts instead.
	failedSampled map[string]Tally

	// owned by the collector
	session         sessionCounts
	health          health
	failuresByStage map[string]int64
	leftOutByStage  map[string]int64
	started         time.Time
	resolvedAtStart int64 // problems done or finally failed before this session, for the ETA
}

// inputCounts are the counters of the feeder and the workers.
type inputCounts struct {
	rows, badLines, duplicates, unique         atomic.Int64
	alreadyDone, skippedFailed, skippedLeftOut atomic.Int64
	inFlight                                   atomic.Int64
	lines                                      atomic.Int64 // input rows counted up front; 0 until known
	readDone                                   atomic.Bool

	mu        sync.Mutex
	badSample []source.InputError // the first few bad lines
	// duplicate documents left out this session, and the first few
	duplicateDocs   int64
	duplicateSample []source.DuplicateDocument
}

// sessionCounts are the collector's counters of this session.
type sessionCounts struct {
	done, failed, leftOut int64
}

// stopper stops the admission of new problems, once, with a reason.
type stopper struct {
	once          sync.Once
	feeding       chan struct{} // closed when no new problem may start
	reason, cause string        // set before feeding is closed
}

func (s *stopper) stopNow(reason, cause string) {
	s.once.Do(func() { s.reason, s.cause = reason, cause; close(s.feeding) })
}

func (s *stopper) stopped() bool {
	select {
	case <-s.feeding:
		return true
	default:
		return false
	}
}

const badLineSample = 20

func (l *loop) loop(ctx context.Context) error {
	l.begin()
	switch {
	case l.meter.Exhausted():
		l.stop.stopNow("budget reached before the run started: "+l.budgetString(), StopBudget)
	case l.stoppedAtBudget:
		l.stop.stopNow("budget reached before the run started (the last session stopped at it; raise it to go on): "+l.budgetString(), StopBudget)
	}
	if err := l.checkpoint(); err != nil { // status knows the run from its first second
		return err
	}
	// A pass reads the input and runs every pending problem. In batch mode
	// a problem whose requests went into batches waits; once batches
	// answer, another pass runs the problems they let go on (a wave).
	for pass := 0; ; pass++ {
		if err := l.pass(ctx, pass); err != nil {
			return err
		}
		ready, err := l.nextWave(ctx)
		if err != nil {
			return err
		}
		if ready == nil {
			break
		}
		l.only = ready
	}
	if reason, cause := l.batchStopReason(); cause != "" && !l.stop.stopped() && ctx.Err() == nil {
		l.stop.stopNow(reason, cause)
	}
	if l.stop.stopped() {
		l.report.StopReason, l.report.StoppedBy = l.stop.reason, l.stop.cause
	}
	if ctx.Err() != nil {
		l.report.StopReason, l.report.StoppedBy = "interrupted", StopInterrupt
	}
	return nil
}

// pass reads the input once and processes the problems it admits: every
// pending one in the first pass, the ones in l.only after that.
func (l *loop) pass(ctx context.Context, pass int) error {
	runCtx, cancelRun := context.WithCancelCause(ctx) // requests: ends on Ctrl-C or a fatal error
	defer cancelRun(nil)
	readCtx, cancelRead := context.WithCancel(context.Background()) // the input is read to its end unless the run fails
	defer cancelRead()

	var bg sync.WaitGroup
	work := make(chan source.Problem, 64)
	results := make(chan outcome, l.report.ProblemsInFlight)
	var readErr error
	counted := make(chan struct{})
	switch {
	case pass == 0 && l.inputCounted:
		close(counted)
	case pass == 0:
		bg.Go(func() { defer close(counted); l.countInput(readCtx) })
	}
	bg.Go(func() {
		defer close(work)
		if pass == 0 {
			readErr = l.feed(readCtx, work)
		} else {
			readErr = l.feedReady(readCtx, work)
		}
	})
	bg.Go(func() { l.work(runCtx, work, results) })
	fatal := l.collect(ctx, results, counted, func(err error) { cancelRun(err); cancelRead() })
	cancelRead()
	bg.Wait()

	if fatal == nil && readErr != nil && !errors.Is(readErr, context.Canceled) {
		fatal = fmt.Errorf("reading input: %w", readErr)
	}
	return fatal
}

// feedReady reads the input again and admits the problems of l.only: those
// whose batched requests were answered.
func (l *loop) feedReady(ctx context.Context, work chan<- source.Problem) error {
	return source.ReadUnits(ctx, source.SpecOf(l.job), func(p source.Problem) error {
		if _, ok := l.only[p.ID]; !ok || l.stop.stopped() {
			return nil
		}
		delete(l.only, p.ID)
		if l.settled.has(p.ID) {
			return nil // a batch that answered it late lists it again
		}
		return l.send(ctx, work, p)
	}, func(*source.InputError) {})
}

// send hands p to the workers, unless the run stops taking problems.
func (l *loop) send(ctx context.Context, work chan<- source.Problem, p source.Problem) error {
	select {
	case work <- p:
		return nil
	case <-l.stop.feeding:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// begin sets up the session's counters from the failures of earlier sessions.
func (l *loop) begin() {
	l.started = time.Now()
	l.part.part = l.job.PartitionSpec()
	l.part.sample = l.opt.Pilot
	l.stop.feeding = make(chan struct{})
	l.failuresByStage, l.leftOutByStage = map[string]int64{}, map[string]int64{}
	l.resolvedAtStart = int64(l.run.DoneCount())
	for _, f := range l.run.Failures() {
		if !l.retryFailed && !f.Transient {
			l.resolvedAtStart++
			if job.LeftOutStage(f.Stage) {
				l.leftOutByStage[f.Stage]++
			} else {
				l.failuresByStage[f.Stage]++
				l.eng.causes.add(f.Stage, f.Reason)
			}
		}
	}
}

// feed reads the input to its end, counting every row, and admits the
// problems that are new, not done and not failed before, until the run
// stops taking problems.
func (l *loop) feed(ctx context.Context, work chan<- source.Problem) error {
	defer l.input.readDone.Store(true)
	type seenAt struct {
		content uint64
		file    string // shared by the problems of one file
		line    int
	}
	seen := idmap.New[seenAt]()
	seenPassages := idmap.New[struct{}]() // by content hash
	return source.ReadUnits(ctx, source.SpecOf(l.job), func(p source.Problem) error {
		l.input.rows.Add(1)
		if !l.part.admit(&p) {
			return nil // another worker's problem
		}
		if p.DuplicateOf != nil { // a document with the text of an earlier one
			l.input.duplicates.Add(1)
			if p.PassageIndex == 0 {
				l.duplicateDocument(p)
			}
			return nil
		}
		content := xxhash.Sum64String(p.Text + "\x00" + p.Answer)
		if s, dup := seen.Get(p.ID); dup {
			if s.content != content {
				l.bad(&source.InputError{File: p.File, Line: p.Line, Reason: fmt.Sprintf("id %q is already used by %s:%d for a different problem", p.ID, s.file, s.line)})
			} else {
				l.input.duplicates.Add(1)
			}
			return nil
		}
		seen.Set(p.ID, seenAt{content, p.File, p.Line})
		if p.DocHash != "" { // a passage: identical passages are processed once
			if _, dup := seenPassages.Get(p.DocHash); dup {
				l.input.duplicates.Add(1)
				return nil
			}
			seenPassages.Set(p.DocHash, struct{}{})
		}
		l.input.unique.Add(1)
		if l.run.Done(p.ID) {
			l.input.alreadyDone.Add(1)
			return nil
		}
		if f, failed := l.run.Failed(p.ID); failed && !l.retryFailed && !f.Transient {
			if job.LeftOutStage(f.Stage) {
				l.input.skippedLeftOut.Add(1)
			} else {
				l.input.skippedFailed.Add(1)
			}
			return nil
		}
		if l.stop.stopped() {
			return nil // the problem stays pending; the input is still counted
		}
		return l.send(ctx, work, p)
	}, l.bad)
}

// work runs the workers until the feeder is done, then closes results.
// A worker starts a problem when the rollout endpoint can take its
// rollouts (see llm.Client.Admit), and the problem's requests carry its
// admission order as their priority, so the problems under way finish
// before newer ones take request slots.
func (l *loop) work(ctx context.Context, work <-chan source.Problem, results chan<- outcome) {
	var wg sync.WaitGroup
	var admitted atomic.Uint64
	for range l.report.ProblemsInFlight {
		wg.Go(func() {
			for p := range work {
				if l.stop.stopped() || ctx.Err() != nil {
					continue // the problem stays pending
				}
				actx, done, err := l.eng.admit(ctx)
				if err != nil {
					continue // the run is ending; the problem stays pending
				}
				l.input.inFlight.Add(1)
				if l.opt.Pilot != nil {
					actx = l.opt.Pilot.Start(actx, p.ID)
				}
				actx = llm.WithUnit(actx, p.ID)
				o := l.eng.process(llm.WithPriority(actx, admitted.Add(1)), p)
				done()
				l.input.inFlight.Add(-1)
				results <- o
			}
		})
	}
	wg.Wait()
	close(results)
}

// reportEvery is how often, at most, a running run rewrites report.json
// between checkpoints, so that distill status shows the run as it is (the
// requests in flight, the rows read) rather than as it was at the last
// checkpoint. The status tick (5 s, or 250 ms on a terminal) paces it.
const reportEvery = time.Second

// collect takes outcomes until the workers are done, checkpoints, shows
// progress, writes the report once the input is counted, and stops
// admission on Ctrl-C. abort ends the run's requests and its reading after a
// fatal error, which it returns.
func (l *loop) collect(ctx context.Context, results <-chan outcome, counted <-chan struct{}, abort func(error)) error {
	progress := newProgress(l.opt.Status, l.opt.Terminal, l.opt.StatusEvery)
	defer progress.finish()
	checkpoint := time.NewTicker(l.job.Output.CheckpointInterval)
	defer checkpoint.Stop()
	statusTick := time.NewTicker(progress.interval())
	defer statusTick.Stop()
	interrupted := ctx.Done()
	var fatal error
	failRun := func(err error) {
		if fatal == nil {
			fatal = err
			abort(err)
		}
	}
	for {
		select {
		case o, ok := <-results:
			if !ok {
				progress.update(l.statusLine())
				return fatal
			}
			if err := l.take(o); err != nil {
				failRun(err)
			}
		case <-checkpoint.C:
			if err := l.checkpoint(); err != nil {
				failRun(err)
			}
		case now := <-statusTick.C:
			progress.update(l.statusLine()) // fills the report
			if now.Sub(l.report.written) >= reportEvery {
				if err := WriteReport(l.opt.RunFS(), l.job.Out, &l.report); err != nil {
					failRun(err)
				}
			}
		case <-counted: // the total is known: let status show it at once
			counted = nil
			l.fillReport()
			if err := WriteReport(l.opt.RunFS(), l.job.Out, &l.report); err != nil {
				failRun(err)
			}
		case <-interrupted:
			interrupted = nil
			l.stop.stopNow("interrupted", StopInterrupt)
		}
	}
}

// take writes one outcome and acts on its verdict. It returns an error only
// when the run must end.
func (l *loop) take(o outcome) error {
	if llm.ClassOf(o.err) == llm.ClassDeferred { // waits for a batch; the next wave runs it again
		l.deferred++
		return nil
	}
	if l.batcher != nil && (o.record != nil || o.failure != nil) {
		l.settled.add(o.problem.ID)
	}
	switch {
	case o.record != nil:
		if err := l.run.Append(o.record); err != nil {
			return fmt.Errorf("writing record %s: %w", o.record.ID, err)
		}
		l.stats.add(o.record)
		l.session.done++
	case o.failure != nil:
		if err := l.recordFailure(o.problem, o.failure, o.sampled); err != nil {
			return err
		}
	}
	if o.err == nil {
		l.countSampled(o.problem.ID, o.sampled)
	}
	if l.opt.Pilot != nil {
		l.opt.Pilot.End(endOf(o))
	}
	act := l.health.verdict(o, l.endpointOf)
	if act.stopFeeding != "" {
		l.stop.stopNow(act.stopFeeding+": "+l.budgetString(), act.stopCause)
	}
	if act.fatal != nil {
		return authHint(l.job, l.opt.Getenv, act.fatal)
	}
	return nil
}

// authHint adds to an endpoint's 401 or 403 which variable its key is read
// from and whether it held one, never the key.
func authHint(j *job.Job, getenv func(string) string, err error) error {
	var le *llm.Error
	if !errors.As(err, &le) || (le.Status != http.StatusUnauthorized && le.Status != http.StatusForbidden) {
		return err
	}
	ep := j.Endpoints()[clientStage(le.Stage)]
	for _, p := range j.Panels() { // a panel judge with an endpoint of its own
		for _, jd := range p.Judges {
			if job.PanelJudgeRef(p.Stage, jd.Name) == le.Stage {
				ep = jd.Endpoint
			}
		}
	}
	switch {
	case ep.APIKeyEnv == "":
		return fmt.Errorf("%w; no key was sent: the job names no variable to read it from (api_key_env, --api-key-env)", err)
	case getenv(ep.APIKeyEnv) == "":
		return fmt.Errorf("%w; no key was sent: %s (api_key_env) is not set or empty: export it, or name the variable that holds the key with --api-key-env", err, ep.APIKeyEnv)
	}
	return fmt.Errorf("%w; the key in %s (api_key_env) was refused: check it is this endpoint's (%s)", err, ep.APIKeyEnv, ep.BaseURL)
}

// clientStage is the job stage whose endpoint a request stage uses: the
// grounded style's analyze, synthesize and enrich ask the distiller's, its
// closed-book answers the rollout endpoint, a panel judge its stage's.
func clientStage(stage string) string {
	switch stage {
	case job.StageAnalyze, job.StageSynthesize, job.StageEnrich, StageDecompose:
		return job.StageDistill
	case job.StageJudge, job.StageEmpirical, job.StageDistill:
		return stage
	}
	if i := strings.IndexByte(stage, '['); i > 0 { // a panel judge: judge[NAME]
		return stage[:i]
	}
	return job.StageRollout
}

func (l *loop) recordFailure(p source.Problem, pf *problemFailure, sampled rolloutTally) error {
	f := corpus.Failure{
		ID: p.ID, Stage: pf.stage, Reason: pf.reason, Attempts: pf.attempts,
		Time: time.Now().UTC(), Source: fmt.Sprintf("%s:%d", p.File, p.Line), Transient: pf.transient,
		Rollouts: sampled.total, RolloutsCorrect: sampled.correct,
	}
	if err := l.run.RecordFailure(f); err != nil {
		return fmt.Errorf("recording failure of %s: %w", f.ID, err)
	}
	if job.LeftOutStage(f.Stage) {
		l.session.leftOut++
		l.leftOutByStage[f.Stage]++
		if len(l.rejected) < maxRejected {
			r := pf.rejected
			if r == nil {
				r = rejectedOf(p, f.Stage, f.Reason, nil)
			}
			l.rejected = append(l.rejected, *r)
		}
		return nil
	}
	l.failuresByStage[f.Stage]++
	l.eng.causes.add(f.Stage, f.Reason)
	if jsonObjectHint(f.Stage, f.Reason) != "" && !l.warnedJSONObject {
		l.warnedJSONObject = true
		l.log.Warn(jsonObjectAdvice, "stage", f.Stage, "reason", f.Reason)
	}
	l.session.failed++
	l.log.Debug("problem failed", "id", f.ID, "stage", f.Stage, "reason", f.Reason)
	return nil
}

// endpointOf is the base URL a stage sends to, for messages.
func (l *loop) endpointOf(stage string) string {
	switch stage {
	case job.StageDistill, job.StageAnalyze, job.StageSynthesize, job.StageEnrich:
		return l.job.Distill.BaseURL
	case job.StageJudge:
		return l.job.Judge.BaseURL
	case job.StageEmpirical:
		return l.job.Empirical.BaseURL
	}
	return l.job.Rollout.BaseURL
}

// duplicateDocument logs and notes a document left out because an earlier
// one in input order has its text (p is its first passage).
func (l *loop) duplicateDocument(p source.Problem) {
	d := source.DuplicateDocument{Kept: *p.DuplicateOf, Dropped: source.RefOf(p)}
	l.log.Warn("duplicate document left out: an earlier document in input order has its text and is kept",
		"kept", d.Kept.DocID, "kept_file", d.Kept.File, "dropped", d.Dropped.DocID, "dropped_file", d.Dropped.File)
	in := &l.input
	in.mu.Lock()
	defer in.mu.Unlock()
	in.duplicateDocs++
	if len(in.duplicateSample) < source.MaxDuplicateDocuments {
		in.duplicateSample = append(in.duplicateSample, d)
	}
}

func (l *loop) bad(e *source.InputError) {
	l.input.badLines.Add(1)
	l.log.Warn("skipping bad input line", "file", e.File, "line", e.Line, "reason", e.Reason)
	l.input.mu.Lock()
	if len(l.input.badSample) < badLineSample {
		l.input.badSample = append(l.input.badSample, *e)
	}
	l.input.mu.Unlock()
}

func (l *loop) budgetString() string {
	s := l.meter.Snapshot().Total
	return fmt.Sprintf("spent $%.4f and %d tokens over every session of this run (%s)",
		s.CostUSD, s.PromptTokens+s.CompletionTokens, l.job.BudgetShare())
}

// countInput counts the input's rows up front, for the total and the ETA.
func (l *loop) countInput(ctx context.Context) {
	n, err := source.CountRows(ctx, source.SpecOf(l.job))
	if err != nil {
		l.log.Debug("could not count the input's rows up front", "err", err)
		return
	}
	l.input.lines.Store(n)
}

func (l *loop) checkpoint() error {
	if err := l.run.Commit(); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	l.fillReport()
	return WriteReport(l.opt.RunFS(), l.job.Out, &l.report)
}
