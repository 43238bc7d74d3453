package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// Run statuses in report.json.
const (
	StatusRunning  = "running"
	StatusFinished = "finished" // every input problem is a record or a failure line
	StatusStopped  = "stopped"  // budget reached or interrupted; run again to resume
	StatusFailed   = "failed"   // a fatal error (bad endpoint, key, model, disk)
)

// Report is RUN/report.json: what the run has done, what it cost and how long
// it took. Problem counts are over the unique problems of the input:
// Unique = Done + Failed + LeftOut + Pending.
type Report struct {
	Status         string    `json:"status"`
	StopReason     string    `json:"stop_reason,omitempty"`
	SpecVersion    string    `json:"spec_version"`
	ToolVersion    string    `json:"tool_version"`
	JobFingerprint string    `json:"job_fingerprint"`
	Started        time.Time `json:"started"`
	Updated        time.Time `json:"updated"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`

	Problems        ProblemCounts            `json:"problems"`
	FailuresByStage map[string]int64         `json:"failures_by_stage"`
	BadLines        []InputError             `json:"bad_lines,omitempty"` // the first few; the count is in Problems
	CorpusRows      int64                    `json:"corpus_rows"`
	Rollouts        RolloutStats             `json:"rollouts"`
	Validity        map[string]*TypeValidity `json:"validity_by_type"`
	Repairs         map[string]int64         `json:"repairs_by_stage"`
	StageSeconds    map[string]float64       `json:"stage_seconds"`
	LLM             llm.Snapshot             `json:"llm"`
	ProblemsPerMin  float64                  `json:"problems_per_minute"`
	ETASeconds      *float64                 `json:"eta_seconds,omitempty"`
	Shards          int                      `json:"shards"`
}

// ProblemCounts adds up: Unique = Done + Failed + LeftOut + Pending.
type ProblemCounts struct {
	InputRows  int64 `json:"input_rows"`
	BadLines   int64 `json:"bad_lines"`
	Duplicates int64 `json:"duplicates"`
	Unique     int64 `json:"unique"`
	Done       int64 `json:"done"`
	Failed     int64 `json:"failed"`
	LeftOut    int64 `json:"left_out"` // excluded by selection, with the reason in failures.jsonl
	Pending    int64 `json:"pending"`
	// This session only.
	AlreadyDone       int64 `json:"already_done"`
	SkippedFailed     int64 `json:"skipped_failed"`
	DoneThisSession   int64 `json:"done_this_session"`
	FailedThisSession int64 `json:"failed_this_session"`
}

// RolloutStats describes the rollouts of the records in the corpus.
type RolloutStats struct {
	Total     int64     `json:"total"`
	Correct   int64     `json:"correct"`
	FormatOK  int64     `json:"format_ok"`
	Truncated int64     `json:"truncated"`
	PassRate  [11]int64 `json:"pass_rate_histogram"` // bucket k: pass rate in [k/10, (k+1)/10), the last is exactly 1
}

// TypeValidity counts the items of one type and the validity judge's verdicts.
type TypeValidity struct {
	Items          int64   `json:"items"`
	Valid          int64   `json:"valid"`
	Invalid        int64   `json:"invalid"`
	Unjudged       int64   `json:"unjudged"`
	Rate           float64 `json:"validity_rate"`
	EmpiricalValid int64   `json:"empirically_valid"`
	EmpiricalKnown int64   `json:"empirically_measured"`
}

// sessionStats are the counters of this session, shared by the workers.
type sessionStats struct {
	mu           sync.Mutex
	stageSeconds map[string]float64
}

func newSessionStats() *sessionStats {
	return &sessionStats{stageSeconds: map[string]float64{}}
}

func (s *sessionStats) stageTime(stage string, d time.Duration) {
	s.mu.Lock()
	s.stageSeconds[stage] += d.Seconds()
	s.mu.Unlock()
}

func (s *sessionStats) snapshot() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyMap(s.stageSeconds)
}

// corpusStats accumulates the corpus-level figures of the report, one record
// at a time.
type corpusStats struct {
	Rows     int64
	Rollouts RolloutStats
	Validity map[string]*TypeValidity
}

func (c *corpusStats) add(r *schema.Record) {
	c.Rows++
	rs := &c.Rollouts
	for _, ro := range r.Rollouts {
		rs.Total++
		if ro.Correct {
			rs.Correct++
		}
		if ro.FormatOK {
			rs.FormatOK++
		}
		if ro.FinishReason == "length" {
			rs.Truncated++
		}
	}
	rs.PassRate[min(10, max(0, int(r.PassRate*10)))]++
	if c.Validity == nil {
		c.Validity = map[string]*TypeValidity{}
	}
	for _, it := range r.Rubric {
		for _, key := range []string{it.Type, "overall"} {
			tv := c.Validity[key]
			if tv == nil {
				tv = &TypeValidity{}
				c.Validity[key] = tv
			}
			tv.add(it)
		}
	}
}

func (tv *TypeValidity) add(it schema.Item) {
	tv.Items++
	switch {
	case it.Valid == nil:
		tv.Unjudged++
	case *it.Valid:
		tv.Valid++
	default:
		tv.Invalid++
	}
	if judged := tv.Valid + tv.Invalid; judged > 0 {
		tv.Rate = float64(tv.Valid) / float64(judged)
	}
	if it.EmpiricalValid != nil {
		tv.EmpiricalKnown++
		if *it.EmpiricalValid {
			tv.EmpiricalValid++
		}
	}
}

// scanCorpusStats reads every record of the run directory.
func scanCorpusStats(dir string) (corpusStats, error) {
	var c corpusStats
	err := corpus.ReadAll(dir, func(r *schema.Record) error { c.add(r); return nil })
	return c, err
}

// ReadReport reads RUN/report.json; a missing file is not an error (zero report, false).
func ReadReport(dir string) (Report, bool, error) {
	var r Report
	b, err := os.ReadFile(corpus.Layout{Dir: dir}.Report())
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("reading report: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("%s: %w", corpus.Layout{Dir: dir}.Report(), err)
	}
	return r, true, nil
}

func writeReport(dir string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fsys.WriteFileAtomic(fsys.OS, corpus.Layout{Dir: dir}.Report(), append(b, '\n'), 0o644)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
