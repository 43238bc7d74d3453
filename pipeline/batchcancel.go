package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/llm"
)

// BatchDir is where a run directory keeps its batch journal and files.
func BatchDir(run string) string { return batchDir(run) }

// ReadBatches reads the batch journal of a run directory: the latest state
// of every batch, in the order they were made (none without batch mode).
// It takes no lock, so it reads a running run's journal too.
func ReadBatches(run string) ([]llm.BatchState, error) {
	return llm.ReadBatchStates(batchDir(run))
}

// BatchCancelled is what cancelling one batch did.
type BatchCancelled struct {
	State llm.BatchState // the journal's state before the call
	// After is the provider's batch after the call (its status is
	// cancelling or cancelled, or final when it had finished already).
	After llm.BatchObject
	Err   error // the cancel failed; the batch goes on
}

// CancelBatches asks the providers to cancel every batch the run
// directory's journal has submitted (or uploaded the file of), with the API
// keys named by RUN/job.yaml (read from getenv). Of the run directory it
// writes only the cancel request (llm.BatchCancelFile), never the journal:
// the run that polls the batches (running now, or the next distill run)
// sees them cancelled, ingests what they answered, submits no new batch
// and stops with stopped_by batch_cancelled. A batch that had already finished is
// reported with its final status, not as an error.
func CancelBatches(ctx context.Context, run string, getenv func(string) string, httpc *http.Client) ([]BatchCancelled, error) {
	states, err := ReadBatches(run)
	if err != nil {
		return nil, err
	}
	var open []llm.BatchState
	for _, s := range states {
		if s.Phase == llm.PhaseSubmitted || s.Phase == llm.PhaseUploaded || s.Phase == llm.PhaseLost {
			open = append(open, s)
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	apis, err := runBatchAPIs(run, getenv, httpc)
	if err != nil {
		return nil, err
	}
	// Asked first, so a run about to create a batch creates none.
	if err := os.WriteFile(filepath.Join(batchDir(run), llm.BatchCancelFile), nil, 0o644); err != nil {
		return nil, fmt.Errorf("asking the run to submit no more batches: %w", err)
	}
	out := make([]BatchCancelled, 0, len(open))
	for _, s := range open {
		c := BatchCancelled{State: s}
		api := apis[s.Endpoint]
		switch {
		case api == nil:
			c.Err = fmt.Errorf("the batch was sent to %s, which %s names for no stage", s.Endpoint, jobPath(run))
		case s.Phase == llm.PhaseUploaded || s.Phase == llm.PhaseLost:
			c.After, c.Err = cancelUploaded(ctx, api, s)
		default:
			c.After, c.Err = cancelOne(ctx, api, s.BatchID)
			if e, ok := errors.AsType[*llm.Error](c.Err); ok && e.Status == http.StatusNotFound {
				c.After, c.Err = cancelUploaded(ctx, api, s) // the provider knows it by another id, or not at all
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// cancelUploaded cancels the batch of a file the journal has as uploaded
// (the run may have created it without recording it yet), or of a batch
// whose id the provider does not know, found by its input file and marker.
// When there is none, the run creates none either (the cancel request holds
// it back); a lost batch the provider lists nowhere is said to be lost.
func cancelUploaded(ctx context.Context, api *llm.BatchAPI, s llm.BatchState) (llm.BatchObject, error) {
	obj, found, err := api.FindBatchOf(ctx, s.FileID, s.Marker)
	if err != nil || !found {
		status := "not created"
		if s.Phase != llm.PhaseUploaded {
			status = "lost (the provider does not know it)"
		}
		return llm.BatchObject{Status: status}, err
	}
	return cancelOne(ctx, api, obj.ID)
}

// cancelOne cancels a batch; one that finished meanwhile (409) is read
// instead, so its final status is reported.
func cancelOne(ctx context.Context, api *llm.BatchAPI, id string) (llm.BatchObject, error) {
	obj, err := api.CancelBatch(ctx, id)
	var e *llm.Error
	if errors.As(err, &e) && e.Status == http.StatusConflict {
		return api.GetBatch(ctx, id)
	}
	return obj, err
}

// runBatchAPIs are the batch APIs of the endpoints RUN/job.yaml names, by
// the base URL the journal records, each with its stage's API key.
func runBatchAPIs(run string, getenv func(string) string, httpc *http.Client) (map[string]*llm.BatchAPI, error) {
	path := jobPath(run)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w (the job that made the run names the endpoints and their API keys)", path, err)
	}
	job, err := job.LoadJobFile(path)
	if err != nil {
		return nil, err
	}
	job.Normalize()
	apis := map[string]*llm.BatchAPI{}
	for _, stage := range sortedKeys(job.Endpoints()) {
		ep := job.Endpoints()[stage]
		if ep.BaseURL == "" {
			continue
		}
		key := ""
		if ep.APIKeyEnv != "" {
			key = getenv(ep.APIKeyEnv)
		}
		api, err := llm.NewBatchAPI(llm.Endpoint{BaseURL: ep.BaseURL, APIKey: key},
			llm.Options{MaxAttempts: job.Limits.MaxAttempts, BackoffMax: job.Limits.BackoffMax, HTTPClient: httpc})
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, stage, err)
		}
		if _, seen := apis[api.Base()]; !seen || key != "" {
			apis[api.Base()] = api
		}
	}
	return apis, nil
}

// readBatches sums up the run's batch journal into the status, and into
// its report, whose own figures are as old as its last checkpoint.
func (s *Status) readBatches() error {
	states, err := ReadBatches(s.Dir)
	if err != nil {
		return err
	}
	if len(states) == 0 {
		return nil
	}
	sum := llm.SummarizeBatches(states)
	s.Batches = &sum
	if s.Report != nil {
		s.Report.Batches = s.Batches
	}
	return nil
}

// writeBatches prints the batches line of a summary.
func (r *Report) writeBatches(w io.Writer) {
	if r.Batches == nil {
		return
	}
	fmt.Fprintf(w, "batches: %s", r.Batches)
	if n := r.LLM.Total.BatchAnswers; n > 0 {
		fmt.Fprintf(w, "; %d requests answered in batches", n)
	}
	fmt.Fprintln(w)
}
