package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/buildinfo"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// ErrJobChanged is returned when a run directory was made by a different job.
var ErrJobChanged = errors.New("the job differs from the one that made this run directory")

// ErrInputChanged is returned when a run directory's input files hold
// other content than they did when it was made (not only rows appended).
var ErrInputChanged = errors.New("the input differs from the one this run directory was made from")

// Options are the settings of one invocation that are not part of the job.
type Options struct {
	Force       bool // run even if the job changed
	RetryFailed bool // retry problems recorded in failures.jsonl
	// ToolVersion is the version of the program, stored in every record's
	// provenance and in the manifest; when empty, what the build
	// information gives (internal/buildinfo).
	ToolVersion string
	Logger      *slog.Logger
	Status      io.Writer     // progress output, normally stderr; nil for none
	Terminal    bool          // Status is a terminal: draw a progress bar
	StatusEvery time.Duration // plain status line interval when not a terminal (default 5s)
	Getenv      func(string) string
	// HTTPClient, when set, carries every endpoint's requests (benchmarks use
	// it to reach an in-process simulated endpoint); nil means a tuned client
	// per endpoint.
	HTTPClient *http.Client
	// Pilot, set by distill plan only, narrows the run to a sample and
	// watches its problems (package plan).
	Pilot Pilot
	// Decompose, when set, makes the run decompose the saturated items of
	// the records its input lists (distill refine --decompose; see Seeds).
	Decompose Seeds

	hooks *hooks  // set by tests only
	fs    fsys.FS // set by tests only: the run directory's file system; nil is fsys.OS
}

// hooks let tests reach inside a run.
type hooks struct {
	extract func(text, finishReason string) (string, bool) // replaces defaultExtract
}

// Fill sets the defaults of the options left unset: a logger that
// discards, os.Getenv, and the build's version.
func (o *Options) Fill() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ToolVersion == "" {
		o.ToolVersion = buildinfo.Version("")
	}
}

// Run builds or resumes the corpus of job. It returns the final report
// (also written to RUN/report.json) and an error only when the run could not
// go on: a bad job or input (a *UsageError), a locked or changed run
// directory, a fatal endpoint error or a disk error. Per-problem failures are
// in the report, not in the error.
func Run(ctx context.Context, jb job.Job, opt Options) (*Report, error) {
	opt.Fill()
	jb.Normalize()
	if err := jb.Validate(); err != nil {
		return nil, err
	}
	if err := source.CheckInputs(source.SpecOf(&jb)); err != nil {
		return nil, err
	}
	ps, err := prompts.Load(jb.PromptsDir)
	if err != nil {
		return nil, err
	}
	// Every template the job's stages send is rendered once with sample
	// inputs before the first request: a broken override is refused here,
	// not after its stage's first requests were paid for.
	templates := job.TemplatesOf(&jb)
	if opt.Decompose != nil {
		templates = append(templates, prompts.Decompose)
	}
	if err := ps.Check(templates...); err != nil {
		return nil, &job.UsageError{Problems: []string{err.Error()}}
	}
	jb.StampVersions(ps, source.CutterVersion)
	if opt.Decompose != nil { // its template decides the finer items: a new one is a new job
		jb.TemplateHashes[prompts.Decompose] = ps.Hash(prompts.Decompose)
	}
	judgeSets, err := loadJudgePrompts(&jb, ps)
	if err != nil {
		return nil, err
	}

	fresh := freshFiles(opt.RunFS(), jb.Out)
	run, err := corpus.Open(jb.Out, corpus.Options{ShardRows: jb.Output.ShardRows, ToolVersion: opt.ToolVersion, Logger: opt.Logger, FS: opt.RunFS()})
	if err != nil {
		return nil, err
	}
	rows, err := checkInput(ctx, &jb, run, opt)
	if err != nil {
		return nil, errors.Join(err, abandonStart(run, fresh))
	}
	skipped, err := skippedFiles(&jb, opt)
	if err != nil {
		return nil, errors.Join(err, abandonStart(run, fresh))
	}
	l, err := newLoop(&jb, opt, run, ps, judgeSets)
	if err != nil {
		return nil, errors.Join(err, abandonStart(run, fresh))
	}
	defer l.closeLLM()
	l.skipped = skipped
	if rows >= 0 {
		l.input.lines.Store(rows)
		l.inputCounted = true
	}
	runErr := l.loop(ctx)
	if err := run.Commit(); err != nil && runErr == nil {
		runErr = fmt.Errorf("writing the last shard: %w", err)
	}
	if runErr == nil && ctx.Err() == nil {
		runErr = l.compact()
	}
	l.finish(runErr)
	l.logLosses()
	if err := run.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("closing the run: %w", err)
		l.report.Status, l.report.StopReason = StatusFailed, runErr.Error()
	}
	if err := WriteReport(opt.RunFS(), jb.Out, &l.report); err != nil && runErr == nil {
		runErr = fmt.Errorf("writing report: %w", err)
	}
	return &l.report, runErr
}

// startFiles says which of the run directory's files a session found
// missing before it opened the run: those a failed start removes again.
type startFiles struct {
	job, cache bool
	fs         fsys.FS
}

func freshFiles(fsy fsys.FS, dir string) startFiles {
	lay := corpus.Layout{Dir: dir}
	missing := func(path string) bool { _, err := fsy.Stat(path); return errors.Is(err, os.ErrNotExist) }
	return startFiles{job: missing(lay.Job()), cache: missing(lay.Cache()), fs: fsy}
}

// abandonStart undoes a start that failed before any work: job.yaml and
// the cache it created go, and the corpus removes what its Open created
// (a directory it made, its manifest, its lock), so the corrected command
// meets the directory as it was.
func abandonStart(run *corpus.Run, fresh startFiles) error {
	lay := run.Layout()
	if run.DoneCount() == 0 && len(run.Manifest().Shards) == 0 {
		var errs []error
		if fresh.job {
			errs = append(errs, removeIfThere(fresh.fs, lay.Job()))
		}
		if fresh.cache {
			errs = append(errs, removeIfThere(fresh.fs, lay.Cache()), removeIfThere(fresh.fs, cache.IndexPath(lay.Cache())))
		}
		if err := errors.Join(errs...); err != nil {
			return errors.Join(err, run.Close())
		}
	}
	return run.Abandon()
}

func removeIfThere(fsy fsys.FS, path string) error {
	if err := fsy.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s after a failed start: %w", path, err)
	}
	return nil
}

// newLoop settles the run directory's job and prepares the session: the
// previous report, the meter, the cache and the endpoints' clients.
func newLoop(j *job.Job, opt Options, run *corpus.Run, ps *prompts.Set, judgeSets map[string]*prompts.Set) (*loop, error) {
	fingerprint := j.Fingerprint()
	replaced, err := adoptJob(j, fingerprint, run, opt)
	if err != nil {
		return nil, err
	}
	prev, _, err := readReport(opt.RunFS(), j.Out)
	if err != nil {
		opt.Logger.Warn("ignoring unreadable report.json; corpus figures will be recomputed", "err", err)
	}
	stats := corpusStats{Rows: prev.CorpusRows, Rollouts: prev.Rollouts, Validity: prev.Validity, Grounded: prev.Grounded,
		judgePassageTokens: j.JudgePassageBudget()}
	if stats.Rows != run.Manifest().Rows {
		if stats, err = scanCorpusStats(opt.RunFS(), j.Out, j.JudgePassageBudget()); err != nil {
			return nil, fmt.Errorf("reading the corpus for its figures: %w", err)
		}
	}
	sampled, failedSampled := sampledOf(stats.Rollouts, run.Failures())
	l := &loop{
		job: j, opt: opt, log: opt.Logger, run: run, stats: stats,
		retryFailed: opt.RetryFailed || replaced,
		report: Report{
			Status: StatusRunning, SpecVersion: schema.SpecVersion, ToolVersion: opt.ToolVersion,
			JobFingerprint: fingerprint, Style: j.Style, Started: time.Now().UTC(), Sampled: sampled,
			CostCounted: len(j.Prices) > 0, ProblemsInFlight: ProblemsInFlight(j),
		},
	}
	l.failedSampled = failedSampled
	l.rejected = prev.Rejected
	if b := j.BudgetShare(); b.Limited() {
		l.report.Budget = &b
		l.stoppedAtBudget = stoppedAtBudget(&prev, b)
	}
	warnBudgetPerWorker(j, opt.Logger)
	l.meter = newMeter(j, prev.LLM)
	if err := l.openLLM(ps, judgeSets, fingerprint); err != nil {
		return nil, err
	}
	return l, nil
}

// adoptJob checks the job against the one that made the run directory and
// writes RUN/job.yaml when the directory takes this job. It reports whether
// a changed job replaced the old one in a directory without records, whose
// old failures are then retried.
func adoptJob(j *job.Job, fingerprint string, run *corpus.Run, opt Options) (replaced bool, err error) {
	prevFP := run.Manifest().JobFingerprint
	_, statErr := opt.RunFS().Stat(jobPath(j.Out))
	write := errors.Is(statErr, os.ErrNotExist) || prevFP == ""
	if prevFP != "" && prevFP != fingerprint {
		changes := changesFrom(j, opt.RunFS())
		switch {
		case run.DoneCount() == 0:
			opt.Logger.Info("the run directory holds no records yet, so it takes the changed job", "changed", strings.Join(changes, "; "))
			write, replaced = true, true
			// The old job's failures stay in failures.jsonl; replaced makes
			// this session retry them under the new job.
		case opt.Force:
			// job.yaml keeps the first job's settings; the manifest's job
			// history keeps every job's, and each record its own fingerprint.
			opt.Logger.Warn("the job changed; continuing because of --force; records of both jobs are mixed", "changed", strings.Join(changes, "; "))
		default:
			return false, fmt.Errorf("%w (%s):\n  %s\nuse a new --out, restore the old settings, or pass --force to mix them%s", ErrJobChanged, j.Out, strings.Join(changes, "\n  "), orderHint(changes))
		}
	}
	run.SetJob(fingerprint, j.Settings())
	if !write {
		return replaced, nil
	}
	b, err := j.RunDirYAML()
	if err != nil {
		return false, fmt.Errorf("encoding job: %w", err)
	}
	if err := fsys.WriteFileAtomic(opt.RunFS(), jobPath(j.Out), b, 0o644); err != nil {
		return false, fmt.Errorf("writing job.yaml: %w", err)
	}
	return replaced, nil
}

// orderHint says how to resume a run directory whose judges saw their
// items in rubric order (made before judge orders existed, or so set) when
// the job now shuffles them; "" for other changes.
func orderHint(changes []string) string {
	if !slices.ContainsFunc(changes, func(c string) bool { return strings.HasPrefix(c, "judge.order: "+job.OrderRubric+" → ") }) {
		return ""
	}
	return "\nits judges saw their items in rubric order: to resume it as it was made, add order: rubric under judge: in the job file (or pass --judge-order rubric)"
}

// changesFrom lists what changed since the job in RUN/job.yaml.
func changesFrom(jb *job.Job, fsy fsys.FS) []string {
	b, err := fsys.ReadFile(fsy, jobPath(jb.Out))
	old := job.DefaultJob()
	if err == nil {
		err = yaml.Unmarshal(b, &old)
	}
	if err != nil {
		return []string{"the previous job.yaml is unreadable, so what changed is unknown"}
	}
	changes := job.ChangedSettings(&old, jb)
	if len(changes) == 0 {
		return []string{"no setting differs from job.yaml, but the fingerprint does: the directory was made by another version of the tool"}
	}
	return changes
}

// newMeter counts tokens and cost against the budget, starting from what the
// earlier sessions of the run spent: the budget covers the whole run. The
// tokens and cost are then replaced by the response cache's own record of
// what it paid for (openLLM), which survives a kill that report.json does not.
func newMeter(j *job.Job, spent llm.Snapshot) *llm.Meter {
	prices := map[string]llm.Price{}
	for model, p := range j.Prices {
		prices[model] = llm.Price{PromptPerMTok: p.Prompt, CachedPromptPerMTok: p.CachedPrompt, CompletionPerMTok: p.Completion, BatchRate: p.BatchRate}
	}
	b := j.BudgetShare()
	m := llm.NewMeter(prices, llm.Budget{MaxCostUSD: b.MaxCostUSD, MaxTokens: b.MaxTokens})
	m.Restore(spent)
	return m
}

// openCache opens RUN/cache.db. A cache named in the job (--cache) is a
// base: read, never written; what it answers is copied into RUN/cache.db.
func openCache(j *job.Job, log *slog.Logger, fsy fsys.FS) (*cache.Cache, error) {
	opts := []cache.Option{cache.WithLogger(log), cache.WithFS(fsy)}
	own := defaultCachePath(j.Out)
	if j.Cache != "" && filepath.Clean(j.Cache) != filepath.Clean(own) {
		opts = append(opts, cache.WithBase(j.Cache))
	}
	return cache.Open(own, opts...)
}

// compact merges the small shards that checkpoints left into full ones,
// then compacts the cache if it is worth it. A failed merge ends the run
// like any other disk error (exit 1): the merge is crash-safe, so the
// records stay whole, and the next open removes whichever files the
// manifest does not list.
func (l *loop) compact() error {
	c, err := l.run.Compact()
	if err != nil {
		return fmt.Errorf("merging small shards: %w", err)
	}
	if c.Merged > 0 {
		l.log.Info("merged small shards", "merged", c.Merged, "written", c.Written)
	}
	l.compactCache()
	return nil
}

// compactCache rewrites the response cache without its dead entries when
// they are a quarter of the log or more, or some are damaged.
func (l *loop) compactCache() {
	st := l.cache.Stats()
	dead := st.Records - int64(st.Entries+st.Tombstones)
	if st.Damaged == 0 && (dead <= 0 || dead*4 < st.Records) {
		return
	}
	res, err := l.cache.Compact()
	if err != nil {
		l.log.Warn("compacting the response cache failed; it stays as it was", "err", err)
		return
	}
	l.log.Info("compacted the response cache", "entries", res.Entries, "dropped", res.Dropped, "damaged", res.Damaged,
		"bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter)
}

// openLLM opens the response cache and one client per distinct endpoint,
// and builds the engine that uses them.
func (l *loop) openLLM(ps *prompts.Set, judgeSets map[string]*prompts.Set, fingerprint string) error {
	responses, err := openCache(l.job, l.log, l.opt.RunFS())
	if err != nil {
		return err
	}
	if spent, complete := responses.Spent(); complete {
		l.meter.RestoreSpent(spent)
	}
	l.cache = responses
	batcher, err := newBatcher(l.job, fingerprint, responses, l.meter, l.opt)
	if err != nil {
		_ = responses.Close() // nothing was put yet; err is the failure
		return fmt.Errorf("opening the run's batches: %w", err)
	}
	clients, panelClients, err := newClients(l.job, l.opt, responses, l.meter, batcher)
	if err != nil {
		if batcher != nil { // nothing was sent or put yet; err is the failure
			_ = batcher.Close()
		}
		_ = responses.Close()
		return err
	}
	if batcher != nil {
		l.batcher = batcher
		batcher.Start(context.Background())
	}
	l.closeLLM = func() {
		for _, c := range clients {
			c.Close()
		}
		for _, c := range panelClients {
			c.Close() // closing a shared client twice only closes idle connections again
		}
		if batcher != nil {
			if err := batcher.Close(); err != nil {
				l.log.Warn("closing the batch journal", "err", err)
			}
		}
		if err := responses.Close(); err != nil { // a put that failed already stopped the run; its index may be what is lost
			l.log.Warn("closing the response cache", "err", err)
		}
	}
	extract := defaultExtract
	if l.opt.hooks != nil && l.opt.hooks.extract != nil {
		extract = l.opt.hooks.extract
	}
	l.eng = &engine{
		job: l.job, prompts: ps, clients: clients, stageTimes: newStageTimes(),
		toolVersion: l.opt.ToolVersion, fingerprint: fingerprint, log: l.log, extract: extract,
		causes: &causes{}, seeds: l.opt.Decompose,
	}
	l.eng.judges = newJudges(l.job, ps, judgeSets, clients, panelClients)
	return nil
}

// newClients makes one client per distinct endpoint and key, shared by the
// stages that use it, so each endpoint has one rate controller. A panel's
// judge shares the client of a stage at its endpoint, or gets its own;
// panel holds every judge's client by job.PanelJudgeRef, shared ones too.
func newClients(j *job.Job, opt Options, responses *cache.Cache, meter *llm.Meter, batcher *llm.Batcher) (clients, panel map[string]*llm.Client, err error) {
	byEndpoint := map[string]*llm.Client{}
	clients, panel = map[string]*llm.Client{}, map[string]*llm.Client{}
	closeAll := func() {
		for _, c := range byEndpoint {
			c.Close()
		}
	}
	stages := j.Endpoints()
	for _, stage := range sortedKeys(stages) {
		c, err := endpointClient(j, opt, responses, meter, batcher, byEndpoint, stage, stages[stage])
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients[stage] = c
	}
	for _, p := range j.Panels() {
		for _, jd := range p.Judges {
			c, err := endpointClient(j, opt, responses, meter, batcher, byEndpoint, p.Stage, jd.Endpoint)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			panel[job.PanelJudgeRef(p.Field, jd.Name)] = c
		}
	}
	return clients, panel, nil
}

// endpointClient is the client of endpoint ep, for stage's requests: the
// one byEndpoint holds for it, or a new one it then holds.
func endpointClient(j *job.Job, opt Options, responses *cache.Cache, meter *llm.Meter, batcher *llm.Batcher, byEndpoint map[string]*llm.Client, stage string, ep job.Endpoint) (*llm.Client, error) {
	key := fmt.Sprintf("%s\x00%s\x00%v\x00%s", ep.BaseURL, ep.APIKeyEnv, ep.LegacyMaxTokens, ep.Mode)
	if c, ok := byEndpoint[key]; ok {
		return c, nil
	}
	apiKey := ""
	if ep.APIKeyEnv != "" {
		if apiKey = opt.Getenv(ep.APIKeyEnv); apiKey == "" {
			opt.Logger.Info("no API key set; sending requests without one", "endpoint", ep.BaseURL, "env", ep.APIKeyEnv)
		}
	}
	copt := clientOptions(j, ep, opt)
	d, err := batchDeferrer(batcher, stage, ep, apiKey, copt, opt.Logger.Info)
	if err != nil {
		return nil, fmt.Errorf("endpoint for %s: %w", stage, err)
	}
	copt.Defer = d
	c, err := llm.NewClient(llm.Endpoint{BaseURL: ep.BaseURL, APIKey: apiKey}, copt, responses, meter)
	if err != nil {
		return nil, fmt.Errorf("endpoint for %s: %w", stage, err)
	}
	byEndpoint[key] = c
	return c, nil
}

// clientOptions are the llm client settings of one endpoint.
func clientOptions(j *job.Job, ep job.Endpoint, opt Options) llm.Options {
	return llm.Options{
		MaxInFlight:       j.Limits.Concurrency,
		RequestsPerMinute: j.Limits.RequestsPerMinute,
		TokensPerMinute:   j.Limits.TokensPerMinute,
		AttemptTimeout:    j.Limits.AttemptTimeout,
		MaxAttempts:       j.Limits.MaxAttempts,
		BackoffMax:        j.Limits.BackoffMax,
		HTTPClient:        opt.HTTPClient,
		LegacyMaxTokens:   ep.LegacyMaxTokens,
		Logger:            opt.Logger,
	}
}

// ProblemsInFlight is how many problems are worked on at once. Problems are
// admitted independently of request slots, so that problems waiting on a
// slow or hung request, or on a retry, do not leave slots idle: by default
// four times the request concurrency, bounded by a memory budget for the
// rollout text that problems in flight hold. limits.problems_in_flight
// overrides it.
func ProblemsInFlight(j *job.Job) int {
	if j.Limits.ProblemsInFlight > 0 {
		return j.Limits.ProblemsInFlight
	}
	const (
		memoryBudget       = 256 << 20 // bytes of rollout text held by problems in flight
		defaultRolloutSize = 16 << 10  // bytes of one rollout when max_tokens is unset (~4K tokens)
		bytesPerToken      = 4
		perProblemOverhead = 16 << 10 // problem text, prompts, rubric
	)
	rollout := defaultRolloutSize
	if j.Rollout.MaxTokens > 0 {
		rollout = j.Rollout.MaxTokens * bytesPerToken
	}
	perProblem := j.Rollout.N*rollout + perProblemOverhead
	if j.Style == schema.StyleGrounded { // a passage, its replies and, with the empirical stage, K*N answers
		perProblem = 4 * perProblemOverhead
		if j.Empirical.Enabled {
			perProblem += j.Grounded.QuestionsPerPassage * j.Rollout.N * rollout
		}
	}
	return max(1, min(4*j.Limits.Concurrency, memoryBudget/perProblem))
}

// firstFew joins the first n of items, and counts the rest: "a; b; c;
// and 12 more".
func firstFew(items []string, n int, more string) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d %s", strings.Join(items[:n], "; "), len(items)-n, more)
}

// skippedFiles counts the files of a documents input's directories that
// are not documents, and logs them.
func skippedFiles(j *job.Job, opt Options) (*source.SkippedFiles, error) {
	sk, err := source.SpecOf(j).SkippedFiles()
	if err != nil || sk.Files == 0 {
		return nil, err
	}
	opt.Logger.Info("input: skipped "+sk.String(), "examples", strings.Join(sk.Examples, ", "))
	return &sk, nil
}

// checkInput records what this session reads in the run's manifest, after
// refusing an input whose content is not what the directory's records were
// made from (see above). It returns the input's rows when the digest
// counted them (not for documents, whose units are passages), else -1.
func checkInput(ctx context.Context, j *job.Job, run *corpus.Run, opt Options) (int64, error) {
	prev := run.Manifest().Inputs
	now, err := source.DigestInputs(ctx, source.SpecOf(j), prev)
	if err != nil {
		return -1, err
	}
	changes, grew := source.Changes(prev, now)
	switch {
	case len(changes) == 0:
	case run.DoneCount() == 0:
		opt.Logger.Info("the run directory holds no records yet, so it takes the changed input", "changed", firstFew(changes, 3, "more"))
	case opt.Force:
		opt.Logger.Warn("the input changed; continuing because of --force: records made from the old input stay", "changed", firstFew(changes, 3, "more"))
	default:
		return -1, fmt.Errorf("%w (%s):\n  %s\nits records were made from the old content; resume with the input it was made from, use a new --out, or pass --force to keep them and go on",
			ErrInputChanged, j.Out, strings.ReplaceAll(firstFew(changes, 10, "more files changed"), "; ", "\n  "))
	}
	switch {
	case len(prev) == 0:
		var bytes, rows int64
		for _, f := range now.Files {
			bytes, rows = bytes+f.Bytes, rows+f.Rows
		}
		opt.Logger.Info(fmt.Sprintf("input: %d files, %d bytes", len(now.Files), bytes), "rows", rows)
	case len(grew) > 0:
		opt.Logger.Info("the input grew since the last session; its new rows are new work", "grew", firstFew(grew, 3, "more"))
	}
	run.SetInputs(now.Files)
	if source.SpecOf(j).Documents() {
		return -1, nil
	}
	var rows int64
	for _, f := range now.Files {
		rows += f.Rows
	}
	return rows, nil
}
