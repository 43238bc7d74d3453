package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/internal/applog"
	"github.com/rubricforge/rubricforge/internal/fsys"
)

// A batch's phases, as the journal records them.
const (
	// PhaseWritten: the input file is complete on disk, not yet uploaded.
	PhaseWritten = "written"
	// PhaseUploaded: the provider holds the file (FileID); the batch may
	// or may not have been created (a run killed in between finds it by
	// its metadata).
	PhaseUploaded = "uploaded"
	// PhaseSubmitted: the batch exists (BatchID) and is polled.
	PhaseSubmitted = "submitted"
	// PhaseOffline: the input file was written to the offline directory
	// (--batch-files) for the user to run; its output is imported when it
	// appears there.
	PhaseOffline = "offline"
	// PhaseIngested: every answer the batch gave is in the cache.
	PhaseIngested = "ingested"
	// PhaseDropped: the file was not submitted (the budget would have been
	// passed, or the run's batches were cancelled); its rows are asked
	// again by a later run.
	PhaseDropped = "dropped"
	// PhaseLost: the provider answers 404 for the batch id and lists no
	// batch of its input file or marker. Its rows are not asked again (the
	// provider may still be answering them) until distill batches resolve
	// gives its id or forgets it.
	PhaseLost = "lost"
)

// BatchState is what the run directory's journal says of one batch.
type BatchState struct {
	Local    string         `json:"local"`    // the run's own name of the batch, b000001
	Endpoint string         `json:"endpoint"` // base URL, without credentials
	Model    string         `json:"model"`
	Stages   map[string]int `json:"stages"` // rows by stage
	Rows     int            `json:"rows"`
	Bytes    int64          `json:"bytes"`
	// EstCostUSD is the projected cost at the batch rate, counted against
	// the budget while the batch is open.
	EstCostUSD float64 `json:"est_cost_usd"`
	// PromptTokens and MaxCompletion sum the rows' prompt tokens and
	// completion limits (max_tokens) by stage: what EstCostUSD is priced
	// again from as the run learns how long the stages' answers are.
	PromptTokens  map[string]int64 `json:"prompt_tokens,omitempty"`
	MaxCompletion map[string]int64 `json:"max_completion_tokens,omitempty"`
	Phase         string           `json:"phase"`
	FileID        string           `json:"file_id,omitempty"`
	// Marker is in the batch's metadata (BatchMarkerKey), written here
	// before the create is sent: a create whose outcome is unknown, or a
	// batch id the provider no longer knows, is looked for by it.
	Marker  string      `json:"marker,omitempty"`
	BatchID string      `json:"batch_id,omitempty"`
	Status  string      `json:"status,omitempty"` // the provider's status
	Counts  BatchCounts `json:"request_counts"`
	// What ingesting found: rows answered into the cache, rows that
	// failed, rows the batch left unanswered (expired, cancelled).
	Answered int       `json:"answered,omitempty"`
	Failed   int       `json:"failed,omitempty"`
	Missing  int       `json:"missing,omitempty"`
	Note     string    `json:"note,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// Open reports whether the batch still waits for answers.
func (s *BatchState) Open() bool {
	switch s.Phase {
	case PhaseWritten, PhaseUploaded, PhaseSubmitted, PhaseOffline, PhaseLost:
		return true
	}
	return false
}

// BatchJournal is the file name of the journal in a batch directory.
const BatchJournal = "journal.jsonl"

// ReadBatchStates reads the journal in dir without changing it: the latest
// state of every batch, in the order they were created. A missing journal
// is no batches; a torn last line (a kill mid-append) is left out (the
// next Batcher cuts it off; see applog).
func ReadBatchStates(dir string) ([]BatchState, error) { return ReadBatchStatesFS(fsys.OS, dir) }

// ReadBatchStatesFS is ReadBatchStates on fsy.
func ReadBatchStatesFS(fsy fsys.FS, dir string) ([]BatchState, error) {
	var r stateReader
	path := filepath.Join(dir, BatchJournal)
	_, err := applog.Read(fsy, path, r.line(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if r.err != nil {
		return nil, r.err
	}
	if err != nil {
		return nil, err
	}
	return r.states(), nil
}

// stateReader collects the latest state of every batch from the journal's
// lines.
type stateReader struct {
	latest map[string]BatchState
	order  []string
	err    error // the line that is not a batch state
}

func (r *stateReader) line(path string) func(applog.Line) error {
	return func(l applog.Line) error {
		var s BatchState
		if err := json.Unmarshal(l.Data, &s); err != nil || s.Local == "" {
			r.err = fmt.Errorf("%s line %d: not a batch state", path, l.No)
			return r.err
		}
		if r.latest == nil {
			r.latest = map[string]BatchState{}
		}
		if _, seen := r.latest[s.Local]; !seen {
			r.order = append(r.order, s.Local)
		}
		r.latest[s.Local] = s
		return nil
	}
}

func (r *stateReader) states() []BatchState {
	out := make([]BatchState, 0, len(r.order))
	for _, l := range r.order {
		out = append(out, r.latest[l])
	}
	return out
}

// journal appends batch states to the journal, durably (an applog.Log).
type journal struct {
	log *applog.Log
}

// openJournal opens the journal in dir for appending, cutting a torn last
// line off, and returns the states it holds.
func openJournal(fsy fsys.FS, dir string, log *slog.Logger) (*journal, []BatchState, error) {
	var r stateReader
	path := filepath.Join(dir, BatchJournal)
	l, tail, err := applog.Open(path, applog.Options{FS: fsy}, r.line(path))
	if err != nil {
		return nil, nil, err
	}
	if tail.Torn > 0 {
		log.Warn("cut a torn last line off the batch journal (a kill while it was written)", "file", path, "bytes", tail.Torn)
	}
	return &journal{log: l}, r.states(), nil
}

func (j *journal) append(s *BatchState) error {
	s.Updated = time.Now().UTC().Truncate(time.Millisecond)
	if _, err := j.log.AppendJSON(s); err != nil {
		return fmt.Errorf("writing the batch journal: %w", err)
	}
	return nil
}

func (j *journal) close() error { return j.log.Close() }

// AppendBatchState appends s to the journal in dir, as the latest state
// of its batch: for the commands that settle a batch while no run holds
// the directory (distill batches resolve).
func AppendBatchState(dir string, s BatchState) error {
	j, _, err := openJournal(fsys.OS, dir, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return errors.Join(j.append(&s), j.close())
}

// BatchSummary counts batches by what a status line says of them.
type BatchSummary struct {
	InProgress int `json:"in_progress"`
	Completed  int `json:"completed"`
	// Expired and Cancelled batches (their answers are in the cache too;
	// the rest of their rows are asked again).
	Expired   int `json:"expired,omitempty"`
	Cancelled int `json:"cancelled,omitempty"`
	Offline   int `json:"waiting_for_files"`
	Dropped   int `json:"not_submitted"`
	// Lost batches: ids the provider no longer knows (see PhaseLost).
	Lost int `json:"lost,omitempty"`
	// RowsDone and RowsTotal are the request counts of the batches in
	// progress.
	RowsDone  int `json:"rows_done"`
	RowsTotal int `json:"rows_total"`
}

// SummarizeBatches counts states for a status line.
func SummarizeBatches(states []BatchState) BatchSummary {
	var s BatchSummary
	for _, b := range states {
		switch b.Phase {
		case PhaseIngested:
			switch b.Status {
			case "expired":
				s.Expired++
			case "cancelled":
				s.Cancelled++
			default:
				s.Completed++
			}
		case PhaseOffline:
			s.Offline++
		case PhaseDropped:
			s.Dropped++
		case PhaseLost:
			s.Lost++
		default:
			s.InProgress++
			s.RowsTotal += b.Rows
			s.RowsDone += b.Counts.Completed + b.Counts.Failed
		}
	}
	return s
}

// String is the status line's batches part, e.g. "3 in progress (41,200
// of 60,000 done), 2 completed".
func (s BatchSummary) String() string {
	var parts []string
	if s.InProgress > 0 {
		parts = append(parts, fmt.Sprintf("%d in progress (%s of %s done)", s.InProgress, thousands(s.RowsDone), thousands(s.RowsTotal)))
	}
	if s.Completed > 0 {
		parts = append(parts, fmt.Sprintf("%d completed", s.Completed))
	}
	if s.Expired > 0 {
		parts = append(parts, fmt.Sprintf("%d expired", s.Expired))
	}
	if s.Cancelled > 0 {
		parts = append(parts, fmt.Sprintf("%d cancelled", s.Cancelled))
	}
	if s.Offline > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for output files", s.Offline))
	}
	if s.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d not submitted", s.Dropped))
	}
	if s.Lost > 0 {
		parts = append(parts, fmt.Sprintf("%d lost (the provider does not know it; distill batches resolve)", s.Lost))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// thousands formats n with commas.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// sortedStages lists a state's stages, for messages.
func sortedStages(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
