package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
)

// Report is everything `validate` says about a corpus. Its JSON keys are
// stable, documented in docs/validate.md and always present: a figure that cannot
// be computed (a mean of nothing, a field that does not apply to the input)
// is null, and a section the input cannot give is null and named in
// Unavailable.
type Report struct {
	Tool          string        `json:"tool"`
	SpecVersion   string        `json:"spec_version"` // the record layout this tool reads
	Corpus        CorpusInfo    `json:"corpus"`
	InputProblems []Problem     `json:"input_problems"`
	Structure     Structure     `json:"structure"`
	Validity      *Validity     `json:"validity"` // null for a grounded corpus (see Corpus.RubricKind)
	Counts        []StyleCounts `json:"counts"`
	PitfallBonus  *CoOccurrence `json:"pitfall_bonus"`
	PassRates     *PassRates    `json:"pass_rates"`
	Rollouts      *Rollouts     `json:"rollouts"`
	Usage         *Usage        `json:"usage"`
	Provenance    *Provenance   `json:"provenance"`
	Empirical     *Empirical    `json:"empirical"`
	// Discrimination is null for a verl export (no rollouts) and a
	// grounded corpus.
	Discrimination *Discrimination `json:"discrimination"`
	Reliability    *Reliability    `json:"reliability"`
	// JudgePanel is null when no record was judged by a panel.
	JudgePanel *JudgePanel `json:"judge_panel"`
	Grounded   *Grounded   `json:"grounded"` // null without grounded records
	// RunInput is what of a run's input its corpus does not hold, from
	// its report.json; null unless a run directory with one.
	RunInput    *RunInput     `json:"run_input"`
	Unavailable []Unavailable `json:"unavailable"`
	// LiveStats says what a training run's live statistics changed in a
	// corpus made by distill refine --from-stats (its from-stats.json); null
	// for any other corpus.
	LiveStats *corpus.FromStats `json:"live_stats"`
}

// RunInput is a run's account of its input (RUN/report.json): its units
// (problems or passages), those in the corpus, and those it made no record
// of, with why.
type RunInput struct {
	Units          string       `json:"units"` // problems or passages
	InputRows      int64        `json:"input_rows"`
	Unique         int64        `json:"unique"`
	Duplicates     int64        `json:"duplicates"`
	BadLines       int64        `json:"bad_lines"`
	Done           int64        `json:"done"`
	Failed         int64        `json:"failed"`
	LeftOut        int64        `json:"left_out"`
	LeftOutShare   *float64     `json:"left_out_share"` // of the unique units; null when there are none
	LeftOutByStage []StageCount `json:"left_out_by_stage"`
	Pending        int64        `json:"pending"`
	// DuplicateDocuments counts the documents of a grounded input left out
	// as copies of earlier ones; SkippedFiles the files of its
	// directories that are not documents (null when none).
	DuplicateDocuments int64         `json:"duplicate_documents"`
	SkippedFiles       *SkippedFiles `json:"skipped_files"`
}

// StageCount is how many units a stage left out.
type StageCount struct {
	Stage string `json:"stage"`
	Units int64  `json:"units"`
}

// SkippedFiles are the files of a grounded input's directories that are
// no documents, by extension (source.SkippedFiles's keys).
type SkippedFiles struct {
	Files int64 `json:"files"`
	ByExt []struct {
		Ext   string `json:"ext"`
		Files int64  `json:"files"`
	} `json:"by_extension"`
	Examples []string `json:"examples"`
}

// String is "57 files that are not documents (55 .png, 2 .gotmpl)".
func (s *SkippedFiles) String() string {
	var parts []string
	for _, e := range s.ByExt {
		ext := e.Ext
		if ext == "" {
			ext = "with no extension"
		}
		parts = append(parts, fmt.Sprintf("%d %s", e.Files, ext))
	}
	what := "files that are not documents"
	if s.Files == 1 {
		what = "file that is not a document"
	}
	return fmt.Sprintf("%d %s (%s)", s.Files, what, strings.Join(parts, ", "))
}

// CorpusInfo says what was read.
type CorpusInfo struct {
	Paths        []string `json:"paths"`
	Kind         string   `json:"kind"`          // run, export or files
	Format       string   `json:"format"`        // records or verl
	ExportFormat *string  `json:"export_format"` // null unless an export
	ExportSource *string  `json:"export_source"`
	ValidOnly    *bool    `json:"valid_only"` // an export made with --valid-only
	Files        int      `json:"files"`
	FilesRead    int      `json:"files_read"`
	Records      int64    `json:"records"`
	Items        int64    `json:"items"`
	// RubricKind is what the records hold: "math" (rubric items: srar,
	// factual_process), "grounded" (questions with criteria) or "both".
	// A grounded corpus's report leaves the math sections out (null in
	// JSON, named in unavailable); a math corpus's grounded is null.
	RubricKind          string   `json:"rubric_kind"`
	Styles              []Count  `json:"styles"`
	Splits              []Count  `json:"splits"`
	SpecVersions        []Count  `json:"spec_versions"`
	JobFingerprints     []Count  `json:"job_fingerprints"`
	ManifestFingerprint *string  `json:"manifest_fingerprint"`    // null unless a run directory
	ExportFingerprints  []string `json:"export_job_fingerprints"` // null unless an export
}

// Problem is input the audit could not use: an unreadable file, a JSONL
// line or verl row that does not decode, a file that disagrees with the
// manifest listing it.
type Problem struct {
	File  string `json:"file"`
	Line  int64  `json:"line"` // JSONL line or Parquet row, from 1; 0 (null in JSON) for the whole file
	Error string `json:"error"`
}

// MarshalJSON writes a whole-file problem's line as null.
func (p Problem) MarshalJSON() ([]byte, error) {
	type plain struct {
		File  string `json:"file"`
		Line  *int64 `json:"line"`
		Error string `json:"error"`
	}
	q := plain{File: p.File, Error: p.Error}
	if p.Line > 0 {
		q.Line = &p.Line
	}
	return json.Marshal(q)
}

// Structure lists the records that break the corpus's structural rules.
type Structure struct {
	MaxItems              int         `json:"max_items"` // the SRaR item limit checked
	RecordsChecked        int64       `json:"records_checked"`
	RecordsWithViolations int64       `json:"records_with_violations"`
	Violations            int64       `json:"violations"`
	ByRule                []RuleCount `json:"by_rule"`
	Listed                []Violation `json:"listed"` // the first ones in corpus order
}

// RuleCount counts the violations of one rule and the records with any.
type RuleCount struct {
	Rule       string `json:"rule"`
	Violations int64  `json:"violations"`
	Records    int64  `json:"records"`
}

// Violation is one broken rule. ItemID is nil for a rule about the record
// or its rubric as a whole.
type Violation struct {
	RecordID string `json:"record_id"`
	ItemID   *int32 `json:"item_id"`
	Rule     string `json:"rule"`
	Detail   string `json:"detail"`
	File     string `json:"file"`
	Row      int64  `json:"row"` // from 1 within File
	fileIdx  int
}

// Validity is the LLM judge's verdicts by item type (seed 000, Table 5).
type Validity struct {
	ByType  []TypeValidity `json:"by_type"`
	Overall TypeValidity   `json:"overall"`
}

// TypeValidity counts the verdicts on the items of one type. Rate is
// valid / (valid + invalid), null when none was judged.
type TypeValidity struct {
	Type     string   `json:"type"`
	Total    int64    `json:"total"`
	Valid    int64    `json:"valid"`
	Invalid  int64    `json:"invalid"`
	Unjudged int64    `json:"unjudged"`
	Rate     *float64 `json:"rate"`
}

// StyleCounts are the item counts of the records of one style: per record
// by type (seed 000, Table 12), the distribution of items per record
// (Figure 8), words per item (Table 11) and the item weights.
type StyleCounts struct {
	Style          string      `json:"style"`
	Records        int64       `json:"records"`
	ByType         []TypeCount `json:"by_type"`
	Total          TypeCount   `json:"total"`
	ItemsPerRecord []Bin       `json:"items_per_record"`
	WordsPerItem   *float64    `json:"mean_words_per_item"` // null without items
	Weights        []Weight    `json:"weights"`
}

// TypeCount is the distribution over records of the number of items of one
// type; Share is the type's part of all items.
type TypeCount struct {
	Type string `json:"type"`
	Summary
	Share *float64 `json:"share"` // null without items
}

// Weight counts the items with one weight.
type Weight struct {
	Weight float64 `json:"weight"`
	Items  int64   `json:"items"`
}

// CoOccurrence is the number of SRaR records with each count of PITFALL
// (rows) and BONUS (columns) items (seed 000, Table 13).
type CoOccurrence struct {
	Records       int64     `json:"records"`
	Pitfall       []int     `json:"pitfall"` // row labels
	Bonus         []int     `json:"bonus"`   // column labels
	Matrix        [][]int64 `json:"matrix"`  // [pitfall][bonus]
	PitfallTotals []int64   `json:"pitfall_totals"`
	BonusTotals   []int64   `json:"bonus_totals"`
}

// PassRates is the distribution of pass_rate over records with rollouts.
type PassRates struct {
	Records           int64    `json:"records"`
	WithoutRollouts   int64    `json:"records_without_rollouts"`
	Mean              *float64 `json:"mean"` // null without records with rollouts
	Median            *float64 `json:"median"`
	AllWrong          int64    `json:"all_wrong"`   // pass_rate 0
	AllCorrect        int64    `json:"all_correct"` // pass_rate 1
	Histogram         []Range  `json:"histogram"`   // ten bins of width 0.1
	RolloutsPerRecord *Summary `json:"rollouts_per_record"`
}

// Rollouts describes the rollouts and their lengths in completion tokens.
type Rollouts struct {
	Total    int64   `json:"total"`
	Correct  int64   `json:"correct"`
	FormatOK int64   `json:"format_ok"`
	CutOff   int64   `json:"cut_off"` // finish_reason "length"
	Tokens   *Tokens `json:"completion_tokens"`
}

// Tokens is the distribution of completion tokens per rollout, over the
// rollouts whose count is known.
type Tokens struct {
	Known         int64    `json:"known"`
	Unknown       int64    `json:"unknown"`
	Mean          *float64 `json:"mean"` // these five null when no count is known
	Median        *float64 `json:"median"`
	P90           *int32   `json:"p90"`
	P99           *int32   `json:"p99"`
	Max           *int32   `json:"max"`
	MeanCorrect   *float64 `json:"mean_correct"`
	MeanIncorrect *float64 `json:"mean_incorrect"`
	Histogram     []Range  `json:"histogram"`
}

// Usage is what the records cost, from their usage columns. Spend on
// problems that failed or were left out is not in any record (see the run's
// report.json).
type Usage struct {
	Records          int64    `json:"records"`
	Requests         int64    `json:"requests"`
	CachedRequests   int64    `json:"cached_requests"`
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	CostUSD          float64  `json:"cost_usd"`
	CostPerRecordUSD *float64 `json:"cost_per_record_usd"` // null without records
	TokensPerRecord  *float64 `json:"tokens_per_record"`
	// RunRequests and RunCacheReads are the run's own totals from its
	// report.json (every session, failed and left-out problems included):
	// null unless the input is a run directory with a report. Requests here
	// and there count what was sent to the endpoint (llm.StageStats's
	// definition); cache reads are counted apart.
	RunRequests   *int64 `json:"run_requests"`
	RunCacheReads *int64 `json:"run_cache_reads"`
}

// Provenance counts records by the models, settings and versions that made them.
type Provenance struct {
	RolloutModels   []Count    `json:"rollout_models"`
	DistillModels   []Count    `json:"distill_models"`
	JudgeModels     []Count    `json:"judge_models"`     // "(none)": judging was off
	EmpiricalModels []Count    `json:"empirical_models"` // "(none)": the empirical stage was off
	Alphas          []Count    `json:"alphas"`
	ToolVersions    []Count    `json:"tool_versions"`
	CreatedFirst    *time.Time `json:"created_first"` // null when no record says
	CreatedLast     *time.Time `json:"created_last"`
}

// Empirical is the empirical (RLCER) validity of the items that carry it:
// whether an item's satisfaction varies over the rollouts (discriminates)
// and whether it correlates with correctness beyond alpha, the sign set by
// the item's polarity.
type Empirical struct {
	ByType  []TypeEmpirical `json:"by_type"`
	Overall TypeEmpirical   `json:"overall"`
	// SatisfactionByCorrectness is seed 000's Table 7, from the per-rollout
	// verdicts; nil when no record carries them.
	SatisfactionByCorrectness []TypeSatisfaction `json:"satisfaction_by_correctness"`
	// JudgeVsEmpirical compares the LLM judge's verdict with the RLCER rule
	// on the items that have both.
	JudgeVsEmpirical *Agreement `json:"judge_vs_empirical"`
	// RecordsRecomputed had every rollout's verdicts, so their stored
	// figures were recomputed and compared (mismatches are violations).
	RecordsRecomputed int64 `json:"records_recomputed"`
}

// TypeEmpirical counts one type's items. Shares are over measured items.
type TypeEmpirical struct {
	Type                string   `json:"type"`
	Items               int64    `json:"items"`
	Measured            int64    `json:"measured"`       // sat_rate set
	Discriminating      int64    `json:"discriminating"` // 0 < sat_rate < 1 (std > 0)
	Correlated          int64    `json:"correlated"`     // corr > alpha
	Valid               int64    `json:"valid"`          // empirical_valid true
	Undecided           int64    `json:"undecided"`      // measured, correctness constant: no verdict
	DiscriminatingShare *float64 `json:"discriminating_share"`
	CorrelatedShare     *float64 `json:"correlated_share"`
	ValidShare          *float64 `json:"valid_share"`
}

// TypeSatisfaction is how often the items of one type are satisfied by
// correct and by incorrect rollouts, and the point-biserial correlation of
// satisfaction with correctness over (rollout, item) pairs.
type TypeSatisfaction struct {
	Type          string   `json:"type"`
	Pairs         int64    `json:"pairs"`
	Correct       *float64 `json:"correct"`
	Incorrect     *float64 `json:"incorrect"`
	DiffPP        *float64 `json:"diff_pp"`
	PointBiserial *float64 `json:"r_pb"`
}

// Unavailable names a section the input cannot give and why.
type Unavailable struct {
	Section string `json:"section"`
	Reason  string `json:"reason"`
}
