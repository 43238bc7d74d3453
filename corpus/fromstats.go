package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FromStatsName is the file of a run directory made by distill refine
// --from-stats that says what a training run's live statistics changed;
// FromStatsRecordsName holds one FromStatsRecord per record it changed.
const (
	FromStatsName        = "from-stats.json"
	FromStatsRecordsName = "from-stats-records.jsonl"
)

// FromStats is what distill refine --from-stats folded into a corpus: the
// live rubric a training run's rewardd kept in its state directory
// (package livestate).
type FromStats struct {
	Source      string   `json:"source"`
	StateDir    string   `json:"state_dir"`
	Replicas    []string `json:"replicas"`
	Fingerprint string   `json:"fingerprint"`
	// Records read; Matched: those the state directory kept live
	// statistics of with the same rubric; Changed: those it changed.
	Records int64 `json:"records"`
	Matched int64 `json:"matched"`
	Changed int64 `json:"changed"`
	// NotInStats: records no group of was scored; RubricDiffers: records
	// whose rubric is not the one the run scored (another corpus
	// version); Split: records two replicas kept (skipped, unchanged).
	NotInStats    int64 `json:"not_in_stats"`
	RubricDiffers int64 `json:"rubric_differs"`
	Split         int64 `json:"split"`
	// Groups are the matched problems' groups recorded in all.
	Groups int64 `json:"groups"`
	// Retired: items the run stopped paying, dropped from the rubric;
	// RetiredKept: retired items kept (ANSWER items, or the style's rules
	// need them); Admitted: elicited criteria admitted, added;
	// AdmittedSkipped: admitted criteria the record's style has no type
	// for (a PITFALL in a factual_process rubric).
	Retired         int64 `json:"retired"`
	RetiredKept     int64 `json:"retired_kept"`
	Admitted        int64 `json:"admitted"`
	AdmittedSkipped int64 `json:"admitted_skipped"`
	// VerdictsCleared: records that gained criteria, whose stored
	// rollouts' satisfaction verdicts were cleared, since they do not
	// cover the new criteria (run the empirical stage again to measure).
	VerdictsCleared int64 `json:"verdicts_cleared"`
}

// FromStatsRecord is what the live statistics changed in one record.
type FromStatsRecord struct {
	ID            string           `json:"id"`
	RubricVersion int64            `json:"rubric_version"`
	Groups        int64            `json:"groups"`
	Dropped       []FromStatsItem  `json:"dropped"`
	Kept          []FromStatsItem  `json:"kept_retired"`
	Added         []FromStatsItem  `json:"added"`
	NewIDs        map[string]int32 `json:"new_ids"` // old id → new id of the items kept
}

// FromStatsItem is an item dropped, kept or added, with the live rubric's
// evidence for it.
type FromStatsItem struct {
	ID       int32           `json:"id"`     // in the live rubric
	NewID    int32           `json:"new_id"` // in the refined record; 0 when dropped
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Weight   float64         `json:"weight"`
	Reason   string          `json:"reason,omitempty"`
	Evidence json.RawMessage `json:"evidence,omitempty"`
}

// ReadFromStats reads dir/from-stats.json; nil, nil when the directory
// has none (a corpus not refined from live statistics).
func ReadFromStats(dir string) (*FromStats, error) {
	raw, err := os.ReadFile(filepath.Join(dir, FromStatsName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s FromStats
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FromStatsName), err)
	}
	return &s, nil
}
