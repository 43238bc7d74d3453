package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// BatchOptions configure a Batcher. Zero values select the defaults.
type BatchOptions struct {
	// Dir holds the journal and the batch files (RUN/batches).
	Dir string
	// MaxRequests and MaxBytes split input files at the provider's limits
	// (OpenAI: 50,000 requests and 200 MB, read as 200,000,000 bytes).
	MaxRequests int
	MaxBytes    int64
	// CompletionWindow is the window asked for (default "24h").
	CompletionWindow string
	// PollInterval is how often open batches are read (default 30s).
	PollInterval time.Duration
	// CreateSettle is how long a create whose outcome is unknown (a 502
	// or 504, a reply lost) is given to show in the provider's list
	// before the batch is created anew (default 5m).
	CreateSettle time.Duration
	// MaxRowAttempts is how many batches a request may fail in, transiently
	// (a 5xx row, an expired or failed batch), before its caller gets a
	// retryable error; default 3.
	MaxRowAttempts int
	// PlanCompletion is what distill plan's pilot measured of each stage:
	// the completion tokens of a request (its choices together), used to
	// price a stage's batch rows until the run has answers of its own.
	PlanCompletion map[string]float64
	// PilotRequests is how many requests of a stage with no estimate of
	// its answers (neither answers of the run nor PlanCompletion) are sent
	// online first, when the run has a cost budget, so that its batch rows
	// are priced from answers rather than from their max_tokens; default
	// 8, negative for none.
	PilotRequests int
	// ResetRowFailures forgets what earlier batches said of the rows that
	// failed in them (--retry-failed): they are asked again, and the
	// sessions after this one count their failures from zero.
	ResetRowFailures bool
	// OfflineDir, when set, receives the input files instead of the
	// provider, for the user to run (vLLM's run-batch reads them); output
	// files found there as NAME.output.jsonl are imported.
	OfflineDir string
	// Plan is distill plan's projection of each stage per unit of work, in
	// the pipeline's order (from plan.json): a wave the budget cannot pay
	// for whole is cut to the units the budget can carry through the later
	// stages too. Without it a wave is cut to what the budget has left.
	Plan []PlannedStage
	// RunTag goes into each batch's metadata, so that a person looking at
	// the provider's batches can tell which run made one. (A run killed
	// between creating a batch and recording it finds it by its input
	// file, which is its own.)
	RunTag string
	Logger *slog.Logger
	// FS is the file system of Dir and OfflineDir; default fsys.OS.
	FS fsys.FS
}

func (o *BatchOptions) fill() {
	if o.MaxRequests <= 0 {
		o.MaxRequests = 50_000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 200_000_000
	}
	if o.CompletionWindow == "" {
		o.CompletionWindow = "24h"
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 30 * time.Second
	}
	if o.MaxRowAttempts <= 0 {
		o.MaxRowAttempts = 3
	}
	if o.PilotRequests == 0 {
		o.PilotRequests = 8
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FS == nil {
		o.FS = fsys.OS
	}
}

// DeferredRequest is a request a Client in batch mode hands to its
// Deferrer instead of sending it.
type DeferredRequest struct {
	Stage, Model string
	ID           cache.Identity
	N            int    // choices asked for
	Body         []byte // the chat-completions body the Client would have sent
	// Estimates for the budget: prompt tokens (characters/4) and
	// completion tokens (max tokens, or 1024, per choice).
	PromptTokens, CompletionTokens int
}

// Deferrer takes the requests a Client does not send itself (see
// Options.Defer). Defer returns the error the caller of Chat gets: an
// *Error of ClassDeferred when the request will be answered into the cache
// later, or another *Error when it never will (it failed in a batch).
type Deferrer interface {
	Defer(ctx context.Context, r DeferredRequest) error
}

// WithUnit returns ctx naming the unit of work (a problem, a passage) its
// requests belong to, so a Batcher can say which units an answered batch
// lets go on (Batcher.TakeReady).
func WithUnit(ctx context.Context, unit string) context.Context {
	return context.WithValue(ctx, unitKey{}, unit)
}

type unitKey struct{}

func unitOf(ctx context.Context) string {
	u, _ := ctx.Value(unitKey{}).(string)
	return u
}

// Batcher sends deferred requests through a provider's Batch API: it
// collects them into input files (one per endpoint and model, split at the
// limits), uploads them, creates batches, polls them, and puts every
// answer into the cache, priced at the batch rate. Every step is in a
// journal in Dir before anything waits on it, so a killed run resumes by
// polling the batches it made, never by making them again.
type Batcher struct {
	opt   BatchOptions
	fs    fsys.FS
	cache *cache.Cache
	meter *Meter
	log   *slog.Logger
	jr    *journal

	mu       sync.Mutex
	apis     map[string]*BatchAPI // by endpoint base
	states   map[string]*BatchState
	order    []string
	seq      int
	open     map[uint64]string   // key → the batch (local) holding the row
	waiters  map[uint64][]string // key → units waiting for it
	mostOpen int                 // the most rows open since open was last shrunk (shrinkLocked)
	failures map[uint64]rowFailure
	building map[string]*building // by endpoint and model
	queue    []string             // written, to upload and create
	ready    map[string]struct{}
	held     string // why new batches are not submitted ("" while they are)
	cut      string // why a wave was cut to what the budget had left ("" when none was)
	// The provider refused more work: new files wait until heldUntil, or
	// until a batch finishes (freed); backoff doubles with each refusal.
	heldUntil time.Time
	backoff   time.Duration
	freed     chan struct{}
	// pilots are the online requests sent to price a stage's rows (see
	// BatchOptions.PilotRequests); pricedFrom is what each stage's rows
	// were last priced from, to log a change once.
	pilots     map[string]*stagePilot
	pilotCost  float64 // the online price of the pilot requests in flight, at their max_tokens
	pilotDone  chan struct{}
	pricedFrom map[string]string
	fatal      error // what stops the run (a 401 from the batch API, a disk error)
	changed    chan struct{}
	wake       chan struct{}

	stop context.CancelFunc
	done chan struct{}
}

// rowFailure is what earlier batches said of a request that did not get
// an answer.
type rowFailure struct {
	permanent bool
	attempts  int
	status    int
	text      string
}

// building is an input file being written.
type building struct {
	state      *BatchState
	in, rows   fsys.File
	inw, rowsw *bufio.Writer
}

// NewBatcher opens the journal in opt.Dir and the state of every batch in
// it. Register each endpoint's API (Deferrer), then Start.
func NewBatcher(opt BatchOptions, responses *cache.Cache, meter *Meter) (*Batcher, error) {
	opt.fill()
	if responses == nil {
		return nil, errors.New("llm: batch mode needs a response cache")
	}
	if err := fsys.MkdirAllSynced(opt.FS, opt.Dir, 0o755); err != nil {
		return nil, err
	}
	if opt.OfflineDir != "" {
		if err := fsys.MkdirAllSynced(opt.FS, opt.OfflineDir, 0o755); err != nil {
			return nil, fmt.Errorf("batch files directory: %w", err)
		}
	}
	jr, states, err := openJournal(opt.FS, opt.Dir, opt.Logger)
	if err != nil {
		return nil, err
	}
	b := &Batcher{
		opt: opt, fs: opt.FS, cache: responses, meter: meter, log: opt.Logger, jr: jr,
		apis: map[string]*BatchAPI{}, states: map[string]*BatchState{},
		open: map[uint64]string{}, waiters: map[uint64][]string{}, failures: map[uint64]rowFailure{},
		building: map[string]*building{}, ready: map[string]struct{}{},
		changed: make(chan struct{}, 1), wake: make(chan struct{}, 1), freed: make(chan struct{}, 1),
		pilots: map[string]*stagePilot{}, pilotDone: make(chan struct{}, 1), pricedFrom: map[string]string{},
	}
	for i := range states {
		s := states[i]
		b.states[s.Local] = &s
		b.order = append(b.order, s.Local)
		var n int
		if _, err := fmt.Sscanf(s.Local, "b%d", &n); err == nil {
			b.seq = max(b.seq, n)
		}
	}
	if err := b.recover(); err != nil {
		_ = jr.close() // recovery failed before anything was appended; err says why
		return nil, err
	}
	return b, nil
}

// recover rebuilds what the journal implies: the rows of open batches, the
// failures earlier batches reported, and the files to submit.
func (b *Batcher) recover() error {
	if b.opt.ResetRowFailures {
		if err := b.resetFailures(); err != nil {
			return err
		}
	}
	for _, local := range b.order {
		s := b.states[local]
		switch {
		case s.Phase == PhaseIngested:
			b.loadFailures(local)
		case s.Phase == PhaseWritten && !b.fileComplete(local):
			s.Phase, s.Note = PhaseDropped, "the input file was lost before upload; its rows are asked again"
			if err := b.journalLocked(s); err != nil {
				return err
			}
		case s.Open():
			rows, err := readRows(b.fs, b.path(local, "rows"))
			if err != nil {
				return fmt.Errorf("batch %s: %w", local, err)
			}
			for _, r := range rows {
				b.open[r.id.Key] = local
			}
			if s.Phase == PhaseWritten || s.Phase == PhaseUploaded {
				b.queue = append(b.queue, local) // to upload, or to find or create its batch
			}
		}
	}
	// Files a kill left half-written, which the journal never listed.
	entries, _ := b.fs.ReadDir(b.opt.Dir)
	for _, e := range entries {
		local, _, _ := strings.Cut(strings.TrimPrefix(e.Name(), "."), ".")
		_, known := b.states[local]
		temp := strings.HasPrefix(e.Name(), ".") // a download or a rewrite a kill cut short
		if (!known || temp) && e.Name() != BatchJournal && e.Name() != BatchCancelFile {
			_ = b.fs.Remove(filepath.Join(b.opt.Dir, e.Name()))
		}
	}
	return nil
}

func (b *Batcher) fileComplete(local string) bool {
	_, err1 := b.fs.Stat(b.path(local, "input.jsonl"))
	_, err2 := b.fs.Stat(b.path(local, "rows"))
	return err1 == nil && err2 == nil
}

// resetFailures sets aside what the ingested batches recorded of their
// failed rows (NAME.failures.jsonl becomes NAME.failures-reset.jsonl, kept
// for the record), so this session and the ones after it ask those rows
// again with no failure counted, and says how many rows that frees.
func (b *Batcher) resetFailures() error {
	rows := map[string]struct{}{}
	for _, local := range b.order {
		path := b.path(local, "failures.jsonl")
		lines, err := readFailures(b.fs, path)
		if err != nil || len(lines) == 0 {
			continue
		}
		for _, f := range lines {
			rows[f.CustomID] = struct{}{}
		}
		if err := fsys.RenameSynced(b.fs, path, b.path(local, "failures-reset.jsonl")); err != nil {
			return fmt.Errorf("resetting the failed rows of batch %s: %w", local, err)
		}
	}
	if len(rows) > 0 {
		b.log.Info("retrying failed rows: what earlier batches said of their failed rows is reset; they are asked again",
			"rows", len(rows), "max_row_attempts", b.opt.MaxRowAttempts)
	}
	return nil
}

// loadFailures reads the failures an ingested batch recorded.
func (b *Batcher) loadFailures(local string) {
	lines, err := readFailures(b.fs, b.path(local, "failures.jsonl"))
	if err != nil {
		b.log.Warn("could not read a batch's failed rows; they are asked again", "batch", local, "err", err)
		return
	}
	for _, f := range lines {
		var key uint64
		if _, err := fmt.Sscanf(f.CustomID, "%x", &key); err == nil {
			b.noteFailure(key, rowOutcome{status: f.Status, errCode: f.Code, errText: f.Text})
		}
	}
}

func (b *Batcher) path(local, ext string) string { return filepath.Join(b.opt.Dir, local+"."+ext) }

// Deferrer returns the Deferrer of the endpoint api speaks to. Batches of
// this endpoint in the journal are resumed through it.
func (b *Batcher) Deferrer(api *BatchAPI) Deferrer {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.apis[api.Base()] = api
	return &endpointDeferrer{b: b, api: api}
}

type endpointDeferrer struct {
	b   *Batcher
	api *BatchAPI
}

func (d *endpointDeferrer) Defer(ctx context.Context, r DeferredRequest) error {
	return d.b.deferRequest(ctx, d.api, r)
}

// Reasons of a ClassDeferred error: the request was written into a batch
// now, or it already waited in one.
const (
	reasonDeferred = "deferred"
	reasonWaiting  = "deferred_waiting"
)

// deferred is the error of a request that went into a batch; added says
// whether this call put it there.
func deferred(r *DeferredRequest, local string, added bool) *Error {
	reason := reasonWaiting
	if added {
		reason = reasonDeferred
	}
	return &Error{Class: ClassDeferred, Stage: r.Stage, Model: r.Model, Reason: reason,
		Err: fmt.Errorf("%w: request in batch %s", ErrDeferred, local)}
}

// errAnsweredMeanwhile tells the Client that a batch answered the request
// between its cache miss and the Deferrer: it reads the cache again.
var errAnsweredMeanwhile = errors.New("llm: answered by a batch meanwhile")

// ErrDeferred is wrapped by the ClassDeferred error of a request that a
// batch will answer.
var ErrDeferred = errors.New("llm: answered later by a batch")

func (b *Batcher) deferRequest(ctx context.Context, api *BatchAPI, r DeferredRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.failures[r.ID.Key]; ok && (f.permanent || f.attempts >= b.opt.MaxRowAttempts) {
		return f.asError(&r)
	}
	if unit := unitOf(ctx); unit != "" {
		b.waiters[r.ID.Key] = appendUnique(b.waiters[r.ID.Key], unit)
	}
	if local, ok := b.open[r.ID.Key]; ok {
		return deferred(&r, local, false)
	}
	if b.fatal != nil {
		return &Error{Class: ClassFatal, Stage: r.Stage, Model: r.Model, Reason: "batch_api", Err: b.fatal}
	}
	// The caller missed the cache before taking the lock; a batch ingested
	// since put its answer there before freeing its row.
	if _, hit, _ := b.cache.Get(r.ID); hit {
		return errAnsweredMeanwhile
	}
	if p := b.pilotLocked(&r); p != nil {
		return p
	}
	line, err := json.Marshal(batchInputLine{CustomID: r.ID.String(), Method: "POST", URL: "/v1/chat/completions", Body: r.Body})
	if err != nil {
		return &Error{Class: ClassFatal, Stage: r.Stage, Model: r.Model, Reason: "invalid_request", Err: err}
	}
	if int64(len(line))+1 > b.opt.MaxBytes {
		return &Error{Class: ClassPermanent, Stage: r.Stage, Model: r.Model, Reason: "too_large",
			Err: fmt.Errorf("the request's batch line of %d bytes is larger than a batch file may be (%d bytes)", len(line)+1, b.opt.MaxBytes)}
	}
	local, err := b.addRow(api, &r, append(line, '\n'))
	if err != nil {
		return &Error{Class: ClassFatal, Stage: r.Stage, Model: r.Model, Reason: "batch_file", Err: err}
	}
	return deferred(&r, local, true)
}

func appendUnique(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

func (f rowFailure) asError(r *DeferredRequest) *Error {
	class := ClassRetryable
	if f.permanent {
		class = ClassPermanent
	}
	reason := "batch_row"
	if f.status != 0 {
		reason = fmt.Sprint(f.status)
	}
	return &Error{Class: class, Status: f.status, Attempts: f.attempts, Stage: r.Stage, Model: r.Model, Reason: reason,
		Err: fmt.Errorf("failed in %d batch(es): %s", f.attempts, f.text)}
}

// fileFor returns the input file being written for the endpoint and model,
// starting one.
func (b *Batcher) fileFor(api *BatchAPI, model string) (*building, error) {
	k := api.Base() + "\x00" + model
	if bl := b.building[k]; bl != nil {
		return bl, nil
	}
	b.seq++
	local := fmt.Sprintf("b%06d", b.seq)
	in, err := b.fs.OpenFile(b.path(local, "input.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	rows, err := b.fs.OpenFile(b.path(local, "rows"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		_ = in.Close() // nothing written yet; err is the failure
		return nil, err
	}
	bl := &building{
		state: &BatchState{Local: local, Endpoint: api.Base(), Model: model, Stages: map[string]int{}, Created: time.Now().UTC(),
			Marker: NewBatchMarker()},
		in: in, rows: rows, inw: bufio.NewWriterSize(in, 1<<20), rowsw: bufio.NewWriter(rows),
	}
	b.building[k] = bl
	return bl, nil
}

// addRow writes a request's line into the input file of its endpoint and
// model, sealing the file first when the line would pass a limit, and
// after, when the file is full. It returns the batch the row is in.
func (b *Batcher) addRow(api *BatchAPI, r *DeferredRequest, line []byte) (string, error) {
	bl, err := b.fileFor(api, r.Model)
	if err != nil {
		return "", err
	}
	if bl.state.Rows > 0 && bl.state.Bytes+int64(len(line)) > b.opt.MaxBytes {
		if err := b.sealLocked(bl); err != nil {
			return "", err
		}
		if bl, err = b.fileFor(api, r.Model); err != nil {
			return "", err
		}
	}
	if _, err := bl.inw.Write(line); err != nil {
		return "", err
	}
	if err := appendRow(bl.rowsw, rowInfo{id: r.ID, stage: r.Stage, n: max(r.N, 1), prompt: int64(r.PromptTokens), maxCompleted: int64(r.CompletionTokens)}); err != nil {
		return "", err
	}
	s := bl.state
	s.Rows++
	s.Bytes += int64(len(line))
	s.Stages[r.Stage]++
	if s.PromptTokens == nil {
		s.PromptTokens, s.MaxCompletion = map[string]int64{}, map[string]int64{}
	}
	s.PromptTokens[r.Stage] += int64(r.PromptTokens)
	s.MaxCompletion[r.Stage] += int64(r.CompletionTokens)
	b.open[r.ID.Key] = s.Local
	b.mostOpen = max(b.mostOpen, len(b.open))
	if s.Rows >= b.opt.MaxRequests {
		return s.Local, b.sealLocked(bl)
	}
	return s.Local, nil
}

// sealLocked closes an input file, durably, journals it as written and
// queues it for upload.
func (b *Batcher) sealLocked(bl *building) error {
	for k, v := range b.building {
		if v == bl {
			delete(b.building, k)
		}
	}
	err := errors.Join(bl.inw.Flush(), bl.rowsw.Flush(), fsys.SyncFile(bl.in), fsys.SyncFile(bl.rows), bl.in.Close(), bl.rows.Close())
	if err == nil {
		err = fsys.SyncDir(b.fs, b.opt.Dir) // the files durably there before the journal says so
	}
	if err != nil {
		return fmt.Errorf("writing batch file %s: %w", bl.in.Name(), err)
	}
	s := bl.state
	s.Phase = PhaseWritten
	b.states[s.Local] = s
	b.order = append(b.order, s.Local)
	if err := b.journalLocked(s); err != nil {
		return err
	}
	b.queue = append(b.queue, s.Local)
	b.signal(b.wake)
	return nil
}

func (b *Batcher) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Flush seals the input files being written and waits until every
// written file is submitted, dropped (see Held), or waiting for the
// provider to take more work.
func (b *Batcher) Flush(ctx context.Context) error {
	b.mu.Lock()
	for _, bl := range b.building {
		if err := b.sealLocked(bl); err != nil {
			b.mu.Unlock()
			return err
		}
	}
	b.mu.Unlock()
	for {
		b.mu.Lock()
		pending, fatal, held := len(b.queue), b.fatal, time.Now().Before(b.heldUntil)
		b.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		if pending == 0 || held { // held files go once the provider has room (Waiting counts them)
			return nil
		}
		b.signal(b.wake)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-b.changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Waiting reports how many batches are open at the provider: submitted
// and not yet ingested. Batches written to the offline directory are not
// counted (Offline).
func (b *Batcher) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.queue)
	for _, s := range b.states {
		if s.Phase == PhaseUploaded || s.Phase == PhaseSubmitted {
			n++
		}
	}
	return n
}

// Offline lists the batches whose input files wait in the offline
// directory for their output.
func (b *Batcher) Offline() []BatchState {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []BatchState
	for _, l := range b.order {
		if s := b.states[l]; s.Phase == PhaseOffline {
			out = append(out, *s)
		}
	}
	return out
}

// OfflineInput and OfflineOutput are where the offline directory holds a
// batch's input file and where its output file is looked for.
func (b *Batcher) OfflineInput(local string) string {
	return filepath.Join(b.opt.OfflineDir, local+".input.jsonl")
}

// OfflineOutput: see OfflineInput.
func (b *Batcher) OfflineOutput(local string) string {
	return filepath.Join(b.opt.OfflineDir, local+".output.jsonl")
}

// Held says why new batches are not being submitted, or why a wave was
// cut short ("" when neither): the budget, or the run's batches were
// cancelled.
func (b *Batcher) Held() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == "" {
		return b.cut
	}
	return b.held
}

// Wait blocks until a batch was ingested since the last Wait, no batch is
// open, or ctx ends. It returns the error that stops the run, if any.
func (b *Batcher) Wait(ctx context.Context) error {
	for {
		b.mu.Lock()
		fatal, ready := b.fatal, len(b.ready)
		b.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		if ready > 0 || b.Waiting() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-b.changed:
		}
	}
}

// TakeReady returns the units whose requests a batch answered (or failed)
// since the last call.
func (b *Batcher) TakeReady() map[string]struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.ready
	b.ready = map[string]struct{}{}
	return r
}

// States is a copy of every batch's state, in the order they were made.
func (b *Batcher) States() []BatchState {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]BatchState, 0, len(b.order))
	for _, l := range b.order {
		out = append(out, *b.states[l])
	}
	return out
}

// Start resumes the journal's open batches and starts submitting, polling
// and ingesting, until Close. It first reads the batches a killed run left
// and imports the offline output files, so a batch cancelled meanwhile
// holds back new ones before any is submitted.
func (b *Batcher) Start(ctx context.Context) {
	b.relookLost(ctx)
	b.pollOpen(ctx)
	b.importOffline()
	ctx, b.stop = context.WithCancel(ctx)
	b.done = make(chan struct{})
	go b.work(ctx)
}

// Close stops the Batcher's work; open batches stay in the journal, for
// the next run to poll. Files being written are sealed, so their rows are
// submitted by that run.
func (b *Batcher) Close() error {
	if b.stop != nil {
		b.stop()
		<-b.done
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for _, bl := range b.building {
		errs = append(errs, b.sealLocked(bl))
	}
	errs = append(errs, b.jr.close())
	return errors.Join(errs...)
}

// OfflineDir is where input files go for an offline run ("" when they go
// to the provider).
func (b *Batcher) OfflineDir() string { return b.opt.OfflineDir }

// shrinkLocked copies open and waiters into new maps once they hold under
// a quarter of the most rows they held: Go never frees a map's buckets, so
// the 800,000 rollout rows of a 100,000-problem run left 61 MB of empty
// buckets in the heap for the rest of the run. Call with mu held.
func (b *Batcher) shrinkLocked() {
	if len(b.open) >= b.mostOpen/4 {
		return
	}
	open := make(map[uint64]string, len(b.open))
	for k, v := range b.open {
		open[k] = v
	}
	waiters := make(map[uint64][]string, len(b.waiters))
	for k, v := range b.waiters {
		waiters[k] = v
	}
	b.open, b.waiters, b.mostOpen = open, waiters, len(open)
}
