package pipeline

import (
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/llm/cache"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/idmap"
	"github.com/rubricforge/rubricforge/llm"
)

// Why a run in batch mode stopped with work left (report.json's stopped_by).
const (
	// StopBatchFiles: input files were written to batch.files_dir for the
	// user to run; the next run imports their output.
	StopBatchFiles = "batch_files"
	// StopBatchCancelled: the run's batches were cancelled (distill
	// batches cancel); the next run asks what they did not answer.
	StopBatchCancelled = "batch_cancelled"
	// StopBatchLost: problems wait for a batch the provider no longer
	// knows (llm.PhaseLost); distill batches resolve settles it.
	StopBatchLost = "batch_lost"
)

// batchDir is where a run keeps its batch journal and files.
func batchDir(out string) string { return filepath.Join(out, "batches") }

// newBatcher opens the run's batch journal, when a stage is in batch mode.
func newBatcher(j *job.Job, fingerprint string, responses *cache.Cache, meter *llm.Meter, opt Options) (*llm.Batcher, error) {
	if !j.UsesBatch() {
		return nil, nil
	}
	abs, _ := filepath.Abs(j.Out)
	b := j.Batch
	return llm.NewBatcher(llm.BatchOptions{
		Dir: batchDir(j.Out), MaxRequests: b.MaxRequests, MaxBytes: b.MaxBytes, CompletionWindow: b.CompletionWindow,
		PollInterval: b.PollInterval, MaxRowAttempts: b.MaxRowAttempts, CreateSettle: b.CreateSettle, OfflineDir: b.FilesDir, ResetRowFailures: opt.RetryFailed,
		PlanCompletion: planCompletion(j, fingerprint, opt.Logger), Plan: planStages(j, fingerprint),
		RunTag: fingerprint + ":" + filepath.Base(abs), Logger: opt.Logger, FS: opt.RunFS(),
	}, responses, meter)
}

// planCompletion is what RUN/plan.json's pilot measured of each stage: the
// completion tokens of one request, which price the stage's batch rows
// against the budget until the run has answers of its own (a panel's
// judges together, as their requests count to their stage). A plan of
// another job is not used.
func planCompletion(j *job.Job, fingerprint string, log *slog.Logger) map[string]float64 {
	plan, err := corpus.ReadPlan(j.Out)
	if err != nil || plan == nil {
		return nil
	}
	if plan.JobFingerprint != fingerprint {
		log.Info("plan.json is of another job; batch rows are not priced from it", "plan", plan.JobFingerprint, "job", fingerprint)
		return nil
	}
	tokens, requests := map[string]float64{}, map[string]float64{}
	for _, p := range plan.Pilot {
		for key, u := range p.Stages {
			stage, _, _ := strings.Cut(key, "[") // a panel's judge (judge[NAME]) counts to its stage
			tokens[stage] += float64(u.CompletionTokens)
			requests[stage] += float64(u.Requests)
		}
	}
	out := map[string]float64{}
	for stage, n := range requests {
		if n > 0 {
			out[stage] = tokens[stage] / n
		}
	}
	return out
}

// planStages is RUN/plan.json's projection of each stage per unit of work
// (a panel's judges together), in the pipeline's order: the batcher prices
// a row with its unit's later stages from it, when the budget cuts a wave.
// A plan of another job, or without prices, is not used.
func planStages(j *job.Job, fingerprint string) []llm.PlannedStage {
	plan, err := corpus.ReadPlan(j.Out)
	if err != nil || plan == nil || plan.JobFingerprint != fingerprint || !plan.CostCounted || plan.Input.Unique <= 0 {
		return nil
	}
	units := float64(plan.Input.Unique)
	var out []llm.PlannedStage
	at := map[string]int{}
	for _, sp := range plan.Stages {
		stage, _, _ := strings.Cut(sp.Stage, "[")
		i, ok := at[stage]
		if !ok {
			i = len(out)
			at[stage] = i
			out = append(out, llm.PlannedStage{Stage: stage})
		}
		out[i].CostPerUnit += sp.CostUSD.Value / units
		out[i].RequestsPerUnit += sp.Requests.Value / units
	}
	return out
}

// batchDeferrer is the Deferrer of a stage section in batch mode, or nil
// when its requests go online: in auto mode, when the endpoint has no
// Batch API (vLLM and SGLang servers).
func batchDeferrer(b *llm.Batcher, section string, ep job.Endpoint, apiKey string, opt llm.Options, log func(string, ...any)) (llm.Deferrer, error) {
	if b == nil || (ep.Mode != job.ModeBatch && ep.Mode != job.ModeAuto) {
		return nil, nil
	}
	api, err := llm.NewBatchAPI(llm.Endpoint{BaseURL: ep.BaseURL, APIKey: apiKey}, opt)
	if err != nil {
		return nil, err
	}
	if ep.Mode == job.ModeAuto && b.OfflineDir() == "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ok, err := api.Available(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("asking %s whether it has a Batch API: %w", api.Base(), err)
		}
		if !ok {
			log("the endpoint has no Batch API; the stage's requests go online", "stage", section, "endpoint", api.Base())
			return nil, nil
		}
	}
	return b.Deferrer(api), nil
}

// nextWave waits, after a pass in which some problems' requests went into
// batches, until a batch has answered some of them, and returns the
// problems to run again. It returns nil when no batch will answer anything
// this session: none is open (the budget held new ones back, they were
// cancelled, or their files wait in batch.files_dir), or the run stops.
func (l *loop) nextWave(ctx context.Context) (map[string]struct{}, error) {
	if l.batcher == nil || l.stop.stopped() || ctx.Err() != nil {
		return nil, nil
	}
	if err := l.batcher.Flush(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("batches: %w", err)
	}
	if err := l.checkpoint(); err != nil {
		return nil, err
	}
	for {
		if l.batcher.Waiting() == 0 {
			if ready := l.batcher.TakeReady(); len(ready) > 0 {
				l.log.Debug("batch wave", "problems", len(ready))
				return ready, nil
			}
			return nil, nil
		}
		if err := l.waitBatches(ctx); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if ready := l.batcher.TakeReady(); len(ready) > 0 {
			l.log.Debug("batch wave", "problems", len(ready))
			return ready, nil
		}
	}
}

// waitBatches waits for the batcher, showing progress and writing the
// report meanwhile; Ctrl-C ends the wait (the batches stay open, and the
// next run polls them).
func (l *loop) waitBatches(ctx context.Context) error {
	progress := newProgress(l.opt.Status, false, l.opt.StatusEvery)
	tick := time.NewTicker(progress.interval())
	defer tick.Stop()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.batcher.Wait(wctx) }()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("batches: %w", err)
			}
			return nil
		case <-tick.C:
			progress.update(l.statusLine())
			if err := WriteReport(l.opt.RunFS(), l.job.Out, &l.report); err != nil {
				return err
			}
		case <-ctx.Done():
			l.stop.stopNow("interrupted", StopInterrupt)
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) { // the interruption's is expected
				l.log.Warn("waiting for the batches", "err", err)
			}
			return nil
		}
	}
}

// batchStopReason says why problems whose requests wait in batches are
// left at the end of the session, for the report.
func (l *loop) batchStopReason() (reason, cause string) {
	if l.batcher == nil || l.deferred == 0 {
		return "", ""
	}
	l.fillReport()
	pending := l.report.Problems.Pending
	if files := l.batcher.Offline(); len(files) > 0 {
		var runs []string
		for _, f := range files {
			runs = append(runs, fmt.Sprintf("python -m vllm.entrypoints.openai.run_batch -i %s -o %s --model %s",
				l.batcher.OfflineInput(f.Local), l.batcher.OfflineOutput(f.Local), f.Model))
		}
		return fmt.Sprintf("%d problems wait for %d batch file(s) in %s: run each (%s), then run distill again to import the answers",
			pending, len(files), l.job.Batch.FilesDir, strings.Join(runs, "; ")), StopBatchFiles
	}
	if lost := l.batcher.Lost(); len(lost) > 0 {
		var names []string
		for _, s := range lost {
			names = append(names, fmt.Sprintf("%s (%s, %d rows)", s.Local, s.BatchID, s.Rows))
		}
		return fmt.Sprintf("%d problems wait for %d batch(es) the provider no longer knows: %s; "+
			"give its id if you find it at the provider (distill batches resolve %s %s --id BATCH_ID), or ask its rows again (distill batches resolve %s %s --forget; paid again if the provider answered them), then run distill again",
			pending, len(lost), strings.Join(names, ", "), l.job.Out, lost[0].Local, l.job.Out, lost[0].Local), StopBatchLost
	}
	held := l.batcher.Held()
	switch {
	case strings.HasPrefix(held, "budget"):
		return "budget reached: " + held, StopBudget
	case held != "":
		return held, StopBatchCancelled
	}
	return "", ""
}

// batchSummary is the batches part of the status line and the report.
func (l *loop) batchSummary() *llm.BatchSummary {
	if l.batcher == nil {
		return nil
	}
	s := llm.SummarizeBatches(l.batcher.States())
	return &s
}

// settledSet is the problems a batch-mode session settled (a record or a
// failure), which later waves must not run again; the collector adds to
// it while the feeder reads it. Ids are kept as idmap keeps the run's
// done ids: 64-bit numbers where they are hex.
type settledSet struct {
	mu  sync.Mutex
	ids idmap.Map[struct{}]
}

func (s *settledSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids.Len() == 0 {
		s.ids = idmap.New[struct{}]()
	}
	s.ids.Set(id, struct{}{})
}

func (s *settledSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.Has(id) // a zero Map reads as empty
}
