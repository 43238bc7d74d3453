package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/llm"
)

// ErrNotLost is wrapped when distill batches resolve is asked of a batch
// that is not lost.
var ErrNotLost = errors.New("the batch is not lost")

// ResolveBatch settles the lost batch local of the run directory run (one
// the provider answered 404 for and lists by neither its input file nor its
// marker; llm.PhaseLost). With id, the journal takes the batch the provider
// knows by id, once its input file or marker shows it is this batch's; the
// next run polls and ingests it. With id "", the batch is forgotten: the
// next run asks its rows again (paid again if the provider had answered
// them). It refuses while a run holds the directory, and returns the new
// state.
func ResolveBatch(ctx context.Context, run, local, id string, getenv func(string) string, httpc *http.Client) (llm.BatchState, error) {
	if busy, err := corpus.InUse(run); err != nil || busy {
		if err == nil {
			err = fmt.Errorf("a distill run holds %s now; stop it first (it looks for lost batches itself when it starts)", run)
		}
		return llm.BatchState{}, err
	}
	s, err := lostBatch(run, local)
	if err != nil {
		return s, err
	}
	if id == "" {
		s.Phase = llm.PhaseDropped
		s.Note = fmt.Sprintf("forgotten by distill batches resolve (the provider did not know batch %s): its rows are asked again", s.BatchID)
		for _, name := range []string{"input.jsonl", "rows"} {
			_ = os.Remove(filepath.Join(batchDir(run), local+"."+name))
		}
		return s, llm.AppendBatchState(batchDir(run), s)
	}
	apis, err := runBatchAPIs(run, getenv, httpc)
	if err != nil {
		return s, err
	}
	api := apis[s.Endpoint]
	if api == nil {
		return s, fmt.Errorf("the batch was sent to %s, which %s names for no stage", s.Endpoint, jobPath(run))
	}
	obj, err := api.GetBatch(ctx, id)
	if err != nil {
		return s, err
	}
	if obj.InputFileID != s.FileID && (s.Marker == "" || obj.Metadata[llm.BatchMarkerKey] != s.Marker) {
		return s, fmt.Errorf("batch %s reads file %s, not %s's file %s, and does not carry its marker %s: it is not this batch",
			id, obj.InputFileID, local, s.FileID, s.Marker)
	}
	s.Note = fmt.Sprintf("resolved by distill batches resolve: the provider did not know batch %s; it answers as %s", s.BatchID, id)
	s.BatchID, s.Phase, s.Status, s.Counts = id, llm.PhaseSubmitted, obj.Status, obj.RequestCounts
	return s, llm.AppendBatchState(batchDir(run), s)
}

// lostBatch is the journal's state of the lost batch local.
func lostBatch(run, local string) (llm.BatchState, error) {
	states, err := ReadBatches(run)
	if err != nil {
		return llm.BatchState{}, err
	}
	for _, s := range states {
		if s.Local != local {
			continue
		}
		if s.Phase != llm.PhaseLost {
			return s, fmt.Errorf("%s is %s, %w: resolve settles only a lost batch", local, s.Phase, ErrNotLost)
		}
		return s, nil
	}
	return llm.BatchState{}, fmt.Errorf("%s has no batch %s in its journal", run, local)
}
