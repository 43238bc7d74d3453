package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// work submits written files, and apart from that polls open batches and
// ingests finished ones, until ctx ends: a file is uploaded while another
// batch's answers go into the cache, not after.
func (b *Batcher) work(ctx context.Context) {
	defer close(b.done)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			b.submitQueued(ctx)
			select {
			case <-ctx.Done():
				return
			case <-b.wake:
			}
		}
	})
	poll := time.NewTimer(b.opt.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-poll.C:
			b.pollOpen(ctx)
			b.importOffline()
			poll.Reset(b.opt.PollInterval)
		}
	}
}

// fail records what stops the run.
func (b *Batcher) fail(err error) {
	b.mu.Lock()
	if b.fatal == nil {
		b.fatal = err
	}
	b.mu.Unlock()
	b.signal(b.changed)
}

// record changes s and appends it to the journal, under the lock that
// States reads it under; a failure stops the run, and is returned. A state
// is changed by one goroutine at a time (the submitter until it is
// submitted, then the poller), which may read it without the lock.
func (b *Batcher) record(s *BatchState, change func()) error {
	b.mu.Lock()
	change()
	err := b.journalLocked(s)
	b.mu.Unlock()
	if err != nil {
		b.fail(err)
	}
	return err
}

// submitQueued takes the written files in order and submits each. A
// provider that refuses more work for now (429 or 5xx after the retries)
// holds the queue back, longer each time, until the hold ends or one of
// the open batches finishes; an error that retrying cannot cure stops the
// run.
func (b *Batcher) submitQueued(ctx context.Context) {
	for ctx.Err() == nil {
		b.mu.Lock()
		if len(b.queue) == 0 || b.fatal != nil {
			b.mu.Unlock()
			return
		}
		local, hold := b.queue[0], time.Until(b.heldUntil)
		s := b.states[local]
		b.mu.Unlock()
		if hold > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(hold):
			case <-b.freed:
			}
			b.mu.Lock()
			b.heldUntil = time.Time{}
			b.mu.Unlock()
			continue
		}
		if s.Phase == PhaseWritten && b.pilotPending(s) { // priced once its stages' pilots are answered
			select {
			case <-ctx.Done():
				return
			case <-b.pilotDone:
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		err := b.submit(ctx, s)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && ClassOf(err) == ClassRetryable:
			b.holdBack(err.Error())
			continue
		}
		b.mu.Lock()
		b.queue = b.queue[1:]
		b.mu.Unlock()
		if err != nil {
			b.fail(err)
			return
		}
		b.signal(b.changed)
	}
}

// holdBack holds new submissions back after the provider refused more
// work: for the poll interval, doubling with each refusal in a row up to
// half an hour, or until an open batch finishes.
func (b *Batcher) holdBack(why string) {
	b.mu.Lock()
	b.backoff = min(max(2*b.backoff, b.opt.PollInterval), 30*time.Minute)
	b.heldUntil = time.Now().Add(b.backoff)
	wait := b.backoff
	b.mu.Unlock()
	b.log.Warn("the provider takes no more batches for now; holding new ones back", "for", wait, "why", why)
}

// capacityCodes are the codes of a batch that failed because the
// provider's queue was full (OpenAI's enqueued-token limit), not because
// of its rows: they are asked again once there is room, and no row counts
// it as a failure.
var capacityCodes = map[string]bool{"token_limit_exceeded": true, "request_limit_exceeded": true}

// failedForCapacity reports whether a failed batch failed for the
// provider's queue limit.
func failedForCapacity(obj BatchObject) bool {
	if obj.Status != "failed" || obj.Errors == nil {
		return false
	}
	for _, e := range obj.Errors.Data {
		if capacityCodes[e.Code] {
			return true
		}
	}
	return false
}

// submit takes a written or uploaded file to a created batch (or to the
// offline directory), journaling each step before the next.
func (b *Batcher) submit(ctx context.Context, s *BatchState) error {
	if s.Phase == PhaseWritten {
		if why := b.holdReason(s); why != "" {
			return b.drop(s, why)
		}
		if b.opt.OfflineDir != "" {
			return b.writeOffline(s)
		}
	}
	api := b.apiFor(s)
	if api == nil {
		return fmt.Errorf("batch %s was made for %s, which this job no longer uses; finish it with that endpoint or remove %s", s.Local, s.Endpoint, b.opt.Dir)
	}
	if s.Phase == PhaseWritten {
		start := time.Now()
		id, err := api.Upload(ctx, b.fs, b.path(s.Local, "input.jsonl"), s.Local+".input.jsonl")
		if err != nil {
			return err
		}
		_ = b.record(s, func() { s.FileID, s.Phase = id, PhaseUploaded })
		b.log.Debug("batch uploaded", "batch", s.Local, "bytes", s.Bytes, "took", time.Since(start).Round(time.Millisecond))
	}
	if s.Phase == PhaseUploaded {
		if s.Marker == "" { // a journal of an earlier version: the marker is recorded before the create goes
			if err := b.record(s, func() { s.Marker = NewBatchMarker() }); err != nil {
				return err
			}
		}
		// Killed between creating the batch and recording it? The file
		// id is this upload's own, and the marker this batch's, so a
		// batch that has either is ours.
		obj, found, err := api.FindBatchOf(ctx, s.FileID, s.Marker)
		if err != nil {
			return err
		}
		if !found && b.cancelRequested() {
			return b.drop(s, b.Held())
		}
		if !found {
			meta := map[string]string{"rubricforge_batch": s.Local, "rubricforge_run": b.opt.RunTag, BatchMarkerKey: s.Marker}
			if obj, err = api.CreateBatch(ctx, s.FileID, b.opt.CompletionWindow, meta, b.opt.CreateSettle); err != nil {
				return err
			}
		}
		_ = b.record(s, func() { s.BatchID, s.Status, s.Counts, s.Phase = obj.ID, obj.Status, obj.RequestCounts, PhaseSubmitted })
		b.log.Info("batch submitted", "batch", s.Local, "id", s.BatchID, "rows", s.Rows, "model", s.Model, "stages", sortedStages(s.Stages))
	}
	return nil
}

// holdReason says why a written file must not be submitted: the budget,
// counting the open batches' projected cost, or the run's batches were
// cancelled.
func (b *Batcher) holdReason(s *BatchState) string {
	b.cancelRequested()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held != "" {
		return b.held
	}
	s.EstCostUSD = b.estimateLocked(s)
	limit := b.meter.budget.MaxCostUSD
	if limit <= 0 {
		return ""
	}
	b.commitLocked(0)
	left := limit - b.projectedLocked(s) - b.meter.Gate().reservedCost()
	// A file is priced row by row, each row at its stage's longest answer
	// and with its unit's later stages (rowsThatFitLocked): the estimate
	// alone let a wave that just fitted pass the budget. A file of an
	// earlier version, whose rows have no prices, goes by its estimate.
	keep, priced, err := b.rowsThatFitLocked(s, left)
	if err != nil || !priced {
		keep = 0
		if s.EstCostUSD+b.lookaheadLocked(s) <= left {
			keep = s.Rows
		}
	}
	if keep >= s.Rows {
		b.commitLocked(s.EstCostUSD) // online calls leave room for it from now
		return ""
	}
	if keep > 0 {
		b.mu.Unlock()
		err := b.cutFile(s, keep, left, limit)
		b.mu.Lock()
		if err == nil {
			b.commitLocked(s.EstCostUSD)
			return ""
		}
		b.log.Warn("could not cut a batch file to what the budget has left; holding it back whole", "batch", s.Local, "err", err)
	}
	projected := b.projectedLocked(s) + s.EstCostUSD
	b.held = fmt.Sprintf("budget: the next batch (%d requests, about $%.4f at the batch rate) would bring the projected cost to $%.4f, over max_cost_usd %g",
		s.Rows, s.EstCostUSD, projected, limit)
	return b.held
}

// cancelledReason is why a run whose batches were cancelled submits no
// more.
const cancelledReason = "the run's batches were cancelled (distill batches cancel); run again to ask the rest"

// BatchCancelFile is the file in a Batcher's Dir by which distill batches
// cancel asks the run going on (or the next one) to submit nothing more:
// a batch it is about to create would escape the cancellation otherwise.
const BatchCancelFile = "cancel-requested"

// cancelRequested reports whether a cancellation was asked for; the first
// Batcher to see the request holds back every new batch for the rest of
// its session and removes it, so the run after that asks the rest.
func (b *Batcher) cancelRequested() bool {
	path := filepath.Join(b.opt.Dir, BatchCancelFile)
	if _, err := b.fs.Stat(path); err != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.held == cancelledReason
	}
	b.mu.Lock()
	if b.held == "" {
		b.held = cancelledReason
	}
	b.mu.Unlock()
	_ = b.fs.Remove(path)
	return true
}

// drop journals a file as not submitted and frees its rows for a later run.
func (b *Batcher) drop(s *BatchState, why string) error {
	rows, err := readRows(b.fs, b.path(s.Local, "rows"))
	if err != nil {
		return err
	}
	b.mu.Lock()
	for _, r := range rows {
		if b.open[r.id.Key] == s.Local {
			delete(b.open, r.id.Key)
		}
	}
	s.Phase, s.Note = PhaseDropped, why
	err = b.journalLocked(s)
	b.mu.Unlock()
	_ = b.fs.Remove(b.path(s.Local, "input.jsonl"))
	_ = b.fs.Remove(b.path(s.Local, "rows"))
	return err
}

func (b *Batcher) apiFor(s *BatchState) *BatchAPI {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.apis[s.Endpoint]
}

// writeOffline copies the input file to the offline directory.
func (b *Batcher) writeOffline(s *BatchState) error {
	src, err := b.fs.OpenFile(b.path(s.Local, "input.jsonl"), os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	if err := writeStream(b.fs, b.OfflineInput(s.Local), src); err != nil {
		return fmt.Errorf("writing the batch file to %s: %w", b.opt.OfflineDir, err)
	}
	_ = b.record(s, func() { s.Phase = PhaseOffline })
	b.log.Info("batch file written for an offline run", "file", b.OfflineInput(s.Local), "rows", s.Rows, "model", s.Model)
	return nil
}

// importOffline ingests the output files that appeared in the offline
// directory for the files written there.
func (b *Batcher) importOffline() {
	if b.opt.OfflineDir == "" {
		return
	}
	for _, s := range b.snapshot(PhaseOffline) {
		out := b.OfflineOutput(s.Local)
		if _, err := b.fs.Stat(out); err != nil {
			continue
		}
		if err := b.ingest(s, []string{out}, true, true); err != nil {
			b.fail(err)
			return
		}
	}
}

// snapshot lists the states in a phase.
func (b *Batcher) snapshot(phase string) []*BatchState {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*BatchState
	for _, l := range b.order {
		if s := b.states[l]; s.Phase == phase {
			out = append(out, s)
		}
	}
	return out
}

// pollOpen reads every submitted batch, journals what changed, and
// ingests the finished ones.
func (b *Batcher) pollOpen(ctx context.Context) {
	b.cancelRequested()
	for _, s := range b.snapshot(PhaseSubmitted) {
		api := b.apiFor(s)
		if api == nil {
			continue
		}
		obj, err := api.GetBatch(ctx, s.BatchID)
		if e, ok := errors.AsType[*Error](err); ok && e.Status == http.StatusNotFound {
			var found bool
			if obj, found, err = b.relocate(ctx, api, s); err == nil && !found {
				continue
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if ClassOf(err) != ClassRetryable {
				b.fail(err)
				return
			}
			b.log.Warn("could not read a batch; trying again at the next poll", "batch", s.Local, "err", err)
			continue
		}
		if obj.Status != s.Status || obj.RequestCounts != s.Counts {
			_ = b.record(s, func() {
				s.Status, s.Counts = obj.Status, obj.RequestCounts
				if (obj.Status == "cancelling" || obj.Status == "cancelled") && b.held == "" {
					b.held = cancelledReason
				}
			})
			b.signal(b.changed)
		}
		if !obj.Terminal() {
			continue
		}
		if txt := obj.errorText(); txt != "" {
			b.mu.Lock()
			s.Note = obj.Status + ": " + txt
			b.mu.Unlock()
			b.log.Warn("a batch ended with errors; its rows are asked again", "batch", s.Local, "status", obj.Status, "errors", txt)
		}
		start := time.Now()
		var files []string
		for _, f := range []struct{ id, name string }{{obj.OutputFileID, "output.jsonl"}, {obj.ErrorFileID, "errors.jsonl"}} {
			if f.id == "" {
				continue
			}
			if err := api.DownloadFS(ctx, b.fs, f.id, b.path(s.Local, f.name)); err != nil {
				if ctx.Err() == nil {
					b.log.Warn("could not download a batch's file; trying again at the next poll", "batch", s.Local, "err", err)
				}
				files = nil
				break
			}
			files = append(files, b.path(s.Local, f.name))
		}
		if files == nil && (obj.OutputFileID != "" || obj.ErrorFileID != "") {
			continue
		}
		b.log.Debug("batch downloaded", "batch", s.Local, "files", len(files), "bytes", b.sizeOf(files), "took", time.Since(start).Round(time.Millisecond))
		capacity := failedForCapacity(obj)
		if capacity {
			b.holdBack(obj.errorText())
		}
		// A batch that failed for the provider's queue, or that someone
		// cancelled, did not fail the rows it left unanswered.
		if err := b.ingest(s, files, !capacity, !capacity && obj.Status != "cancelled"); err != nil {
			b.fail(err)
			return
		}
	}
}

// relocate looks for a batch whose id the provider answered 404 for, by
// its input file and marker: found under another id, the journal takes
// that id and the batch is polled on; found nowhere, it is marked lost
// (PhaseLost), its rows left waiting, and the run goes on with the rest.
func (b *Batcher) relocate(ctx context.Context, api *BatchAPI, s *BatchState) (BatchObject, bool, error) {
	obj, found, err := api.FindBatchOf(ctx, s.FileID, s.Marker)
	switch {
	case err != nil:
		return obj, false, err
	case found:
		old := obj.ID
		err = b.record(s, func() {
			old, s.BatchID = s.BatchID, obj.ID
			s.Note = fmt.Sprintf("the provider answered 404 for batch %s and lists this batch (its file and marker) as %s", old, obj.ID)
		})
		b.log.Warn("the provider does not know a batch by its id but lists it by its file and marker; polling it under that id",
			"batch", s.Local, "id", old, "now", obj.ID)
		return obj, err == nil, err
	}
	err = b.record(s, func() {
		s.Phase = PhaseLost
		s.Note = fmt.Sprintf("the provider answers 404 for batch %s and lists no batch of file %s or marker %s; its %d rows wait: "+
			"distill batches resolve RUN_DIR %s --id BATCH_ID if you find it, or --forget to ask them again (paid again if the provider had answered them)",
			s.BatchID, s.FileID, s.Marker, s.Rows, s.Local)
	})
	b.log.Warn("lost a batch: the provider does not know its id and lists no batch of its file or marker; its rows wait, the run goes on with the rest",
		"batch", s.Local, "id", s.BatchID, "rows", s.Rows, "resolve", "distill batches resolve")
	b.signal(b.changed)
	return obj, false, err
}

// relookLost looks again, at the start of a session, for the batches an
// earlier one lost: a batch the provider lists again is polled on.
func (b *Batcher) relookLost(ctx context.Context) {
	for _, s := range b.snapshot(PhaseLost) {
		api := b.apiFor(s)
		if api == nil {
			continue
		}
		obj, found, err := api.FindBatchOf(ctx, s.FileID, s.Marker)
		if err != nil || !found {
			continue
		}
		_ = b.record(s, func() {
			s.BatchID, s.Phase = obj.ID, PhaseSubmitted
			s.Note = "found again at the provider as " + obj.ID
		})
		b.log.Info("found a lost batch again at the provider", "batch", s.Local, "id", obj.ID)
	}
}

// Lost lists the batches the provider no longer knows (PhaseLost).
func (b *Batcher) Lost() []BatchState {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []BatchState
	for _, l := range b.order {
		if s := b.states[l]; s.Phase == PhaseLost {
			out = append(out, *s)
		}
	}
	return out
}

// sizeOf is the total size of the files, for the log.
func (b *Batcher) sizeOf(paths []string) int64 {
	var n int64
	for _, p := range paths {
		if fi, err := b.fs.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// ingestChunk is how many answers go to the cache in one group.
const ingestChunk = 512

// ingest puts every answer of a finished batch into the cache, notes the
// rows that failed, and lets the units waiting for its rows go on. A
// provider that works through batches again frees a held-back file
// (working); rows the batch left unanswered count as their failures only
// when countMissing (not when the batch was cancelled, or failed for the
// provider's queue).
func (b *Batcher) ingest(s *BatchState, files []string, working, countMissing bool) error {
	rows, err := readRows(b.fs, b.path(s.Local, "rows"))
	if err != nil {
		return fmt.Errorf("batch %s: %w", s.Local, err)
	}
	seen := make(map[string]bool, len(rows))
	var answered, failed int
	var failures []rowFailureLine
	var chunk []cache.Entry
	var charges []func()
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := b.cache.PutMany(chunk); err != nil {
			return fmt.Errorf("%w: %v", cache.ErrWrite, err)
		}
		for _, c := range charges {
			c()
		}
		chunk, charges = chunk[:0], charges[:0]
		return nil
	}
	for _, path := range files {
		err := eachOutputLine(b.fs, path, func(customID string, o rowOutcome) error {
			r, ok := rows[customID]
			if !ok || seen[customID] {
				return nil // not ours, or a repeat
			}
			seen[customID] = true
			if o.status == 200 && o.errCode == "" {
				d, derr := decodeResponse(o.body, r.n)
				if derr == nil {
					answered++
					if _, hit, _ := b.cache.Get(r.id); hit {
						return nil // answered online meanwhile, or by an earlier ingest
					}
					chunk = append(chunk, cache.Entry{ID: r.id, Value: append([]byte(nil), o.body...),
						Usage: cache.Usage{Stage: r.stage, Model: s.Model, PromptTokens: d.promptTokens, CompletionTokens: d.completionTokens, Batch: true}})
					finish := make([]string, len(d.choices))
					for i, c := range d.choices {
						finish[i] = c.FinishReason
					}
					charges = append(charges, func() { b.meter.batchAnswer(r.stage, s.Model, d.promptTokens, d.completionTokens, finish) })
					if len(chunk) >= ingestChunk {
						return flush()
					}
					return nil
				}
				o.status, o.errText = 0, "the answer is not a chat completion: "+derr.Error()
				o.errCode = "malformed"
			}
			if o.errCode == "batch_cancelled" && !countMissing {
				delete(seen, customID) // left unanswered by a cancellation: missing, not failed
				return nil
			}
			failed++
			failures = append(failures, rowFailureLine{CustomID: customID, Status: o.status, Code: o.errCode, Text: o.errText})
			b.mu.Lock()
			b.noteFailure(r.id.Key, o)
			b.mu.Unlock()
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	missing := 0
	for cid := range rows {
		if !seen[cid] {
			missing++
			if countMissing {
				failures = append(failures, rowFailureLine{CustomID: cid, Code: "missing", Text: "the batch gave no answer for it"})
			}
		}
	}
	if err := writeFailures(b.fs, b.path(s.Local, "failures.jsonl"), failures); err != nil {
		return fmt.Errorf("batch %s: %w", s.Local, err)
	}
	b.mu.Lock()
	for cid, r := range rows {
		if !seen[cid] && countMissing {
			b.noteFailure(r.id.Key, rowOutcome{errCode: "missing", errText: "the batch gave no answer for it"})
		}
		if b.open[r.id.Key] == s.Local {
			delete(b.open, r.id.Key)
		}
		for _, u := range b.waiters[r.id.Key] {
			b.ready[u] = struct{}{}
		}
		delete(b.waiters, r.id.Key)
	}
	b.shrinkLocked()
	s.Phase, s.Answered, s.Failed, s.Missing = PhaseIngested, answered, failed, missing
	err = b.journalLocked(s)
	b.mu.Unlock()
	if err != nil {
		return err
	}
	b.log.Info("batch ingested", "batch", s.Local, "answered", answered, "failed", failed, "missing", missing)
	if working {
		b.mu.Lock()
		if answered > 0 {
			b.backoff = 0 // the provider works through batches again
		}
		b.mu.Unlock()
		b.signal(b.freed) // room at the provider for a held-back file
	}
	for _, name := range []string{"input.jsonl", "rows", "output.jsonl"} {
		_ = b.fs.Remove(b.path(s.Local, name))
	}
	b.signal(b.changed)
	return nil
}

// noteFailure counts a row's failure in a batch. A 4xx other than 408 and
// 429 is the request's own fault and final; anything else (a 5xx, an
// expired or cancelled batch, no answer) is transient. Call with mu held.
func (b *Batcher) noteFailure(key uint64, o rowOutcome) {
	f := b.failures[key]
	f.attempts++
	f.status = o.status
	f.text = o.errText
	if o.errCode != "" && o.errText == "" {
		f.text = o.errCode
	} else if o.errCode != "" {
		f.text = o.errCode + ": " + o.errText
	}
	if o.status != 0 {
		class, _ := classifyStatus(o.status)
		f.permanent = class == ClassPermanent || class == ClassFatal
	}
	if o.errCode == "malformed" {
		f.permanent = true
	}
	b.failures[key] = f
}
