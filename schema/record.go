// Package schema defines the corpus record (spec v1) and its rubric items, the
// parsers that turn model output into typed rubric items and verdicts, and the
// structural rules a rubric must satisfy. It is pure: no I/O, no clocks.
package schema

import (
	"slices"
	"time"
)

// SpecVersion is the version of the record layout. Bump it only together
// with a migration note. (The problem-id encoding and the response-cache key
// have versions of their own, so a layout change keeps ids and paid answers.)
//
// Version 2 added provenance.job_fingerprint, the empirical stage's model
// and alpha, nulls for the models and templates of disabled stages, and the
// per-rollout satisfaction verdicts.
//
// Version 3 added the optional grounded column (Record.Grounded: the
// document-grounded style's passage, analysis and questions with their
// criteria); every other column is as in version 2. A version-2 shard reads
// as records whose Grounded is nil, so validate, export, status and rewardd
// read version-2 corpora unchanged; a version-2 run directory is not
// resumed by this version (its shards would mix two layouts), and the
// refusal says how to go on (see corpus.Run's resume).
const SpecVersion = "3"

// ReadableSpecVersions are the record layouts this version reads: its own
// and version 2, whose records are version 3's without the grounded column.
var ReadableSpecVersions = []string{"2", SpecVersion}

// ReadableSpec reports whether records of spec version v are read by this
// version.
func ReadableSpec(v string) bool { return slices.Contains(ReadableSpecVersions, v) }

// Rubric styles.
const (
	StyleSRaR           = "srar"
	StyleFactualProcess = "factual_process"
)

// Rubric item types.
const (
	TypeSuggest = "SUGGEST"
	TypePitfall = "PITFALL"
	TypeBonus   = "BONUS"
	TypeAnswer  = "ANSWER"
	TypeFactual = "FACTUAL"
	TypeProcess = "PROCESS"
)

// ItemTypes lists every rubric item type in a stable order, for reports.
var ItemTypes = []string{TypeSuggest, TypePitfall, TypeBonus, TypeAnswer, TypeFactual, TypeProcess}

// PolarityOf is +1 for item types whose satisfaction is good and -1 for
// PITFALL, whose satisfaction means the solution fell into the trap.
func PolarityOf(itemType string) int32 {
	if itemType == TypePitfall {
		return -1
	}
	return 1
}

// Item is one rubric criterion.
type Item struct {
	ID       int32   `parquet:"id" json:"id"`
	Type     string  `parquet:"type" json:"type"`
	Text     string  `parquet:"text" json:"text"`
	Weight   float64 `parquet:"weight" json:"weight"`
	Polarity int32   `parquet:"polarity" json:"polarity"`
	// Valid and ValidReason come from the LLM validity judge; nil when not judged.
	Valid       *bool   `parquet:"valid,optional" json:"valid,omitempty"`
	ValidReason *string `parquet:"valid_reason,optional" json:"valid_reason,omitempty"`
	// SatRate, Corr and EmpiricalValid come from empirical validity over the
	// rollouts: satisfaction rate, sign-aware correlation with correctness, and
	// the RLCER rule (std > 0 and corr > alpha). Nil when not measured.
	SatRate        *float64 `parquet:"sat_rate,optional" json:"sat_rate,omitempty"`
	Corr           *float64 `parquet:"corr,optional" json:"corr,omitempty"`
	EmpiricalValid *bool    `parquet:"empirical_valid,optional" json:"empirical_valid,omitempty"`
}

// Rollout is one sampled solution and its verification.
type Rollout struct {
	Index           int32  `parquet:"index" json:"index"`
	Text            string `parquet:"text" json:"text"`
	ExtractedAnswer string `parquet:"extracted_answer" json:"extracted_answer"`
	Correct         bool   `parquet:"correct" json:"correct"`
	FormatOK        bool   `parquet:"format_ok" json:"format_ok"`
	FinishReason    string `parquet:"finish_reason" json:"finish_reason"`
	// CompletionTokens is nil when the endpoint reported usage for several
	// choices together (n > 1 per request).
	CompletionTokens *int32 `parquet:"completion_tokens,optional" json:"completion_tokens,omitempty"`
	// Satisfaction holds the empirical stage's verdicts on this rollout, one
	// per rubric item in item order. It is empty when the stage was off
	// (provenance.empirical_model is null) or could not judge this rollout.
	Satisfaction []Satisfaction `parquet:"satisfaction,list" json:"satisfaction"`
}

// Satisfaction is the satisfaction judge's verdict on one rubric item for one
// solution. Step is the position of the step the item is tied to, 1 for the
// solution's first "### Step" header line (IsStepHeader) whatever number the
// header shows, 0 for the whole solution, -1 for none: the judge is shown
// each step in a tag with its position and names steps by it.
type Satisfaction struct {
	ID        int32 `parquet:"item_id" json:"item_id"`
	Satisfied bool  `parquet:"satisfied" json:"satisfied"`
	Step      int32 `parquet:"step" json:"step"`
}

// Provenance says how a record was made. The model, template and settings
// of a stage that was off are null.
type Provenance struct {
	RolloutModel    string   `parquet:"rollout_model" json:"rollout_model"`
	DistillModel    string   `parquet:"distill_model" json:"distill_model"`
	JudgeModel      *string  `parquet:"judge_model,optional" json:"judge_model"`
	EmpiricalModel  *string  `parquet:"empirical_model,optional" json:"empirical_model"`
	RolloutTemplate string   `parquet:"rollout_template" json:"rollout_template"`
	DistillTemplate string   `parquet:"distill_template" json:"distill_template"`
	JudgeTemplate   *string  `parquet:"judge_template,optional" json:"judge_template"`
	SatisfyTemplate *string  `parquet:"satisfy_template,optional" json:"satisfy_template"`
	Alpha           *float64 `parquet:"alpha,optional" json:"alpha"` // the empirical validity threshold
	// JudgeSeed and EmpiricalSeed are the sampling seeds the stage's judges
	// were asked with; nil when none was sent (the stage was off, the
	// endpoint takes none, or the corpus is older than seeds).
	JudgeSeed     *int64 `parquet:"judge_seed,optional" json:"judge_seed,omitempty"`
	EmpiricalSeed *int64 `parquet:"empirical_seed,optional" json:"empirical_seed,omitempty"`
	// JobFingerprint identifies the job settings that made the record; a
	// corpus resumed with --force after a change holds several.
	JobFingerprint string    `parquet:"job_fingerprint" json:"job_fingerprint"`
	SpecVersion    string    `parquet:"spec_version" json:"spec_version"`
	ToolVersion    string    `parquet:"tool_version" json:"tool_version"`
	CreatedAt      time.Time `parquet:"created_at,timestamp(millisecond)" json:"created_at"`
}

// Usage is what a record cost at the endpoint.
//
// Requests counts the requests sent to the endpoint for the record, and the
// tokens and cost are theirs (llm.StageStats's definition); CachedRequests
// counts the answers read from the response cache instead, which cost
// nothing. (Records written by earlier versions counted cache reads in
// Requests, and their tokens in the token counts.)
type Usage struct {
	Requests         int64   `parquet:"requests" json:"requests"`
	CachedRequests   int64   `parquet:"cached_requests" json:"cached_requests"`
	PromptTokens     int64   `parquet:"prompt_tokens" json:"prompt_tokens"`
	CompletionTokens int64   `parquet:"completion_tokens" json:"completion_tokens"`
	CostUSD          float64 `parquet:"cost_usd" json:"cost_usd"`
}

// Record is one row of the corpus: one problem, its rollouts and its rubric.
type Record struct {
	ID         string     `parquet:"id" json:"id"`
	Source     string     `parquet:"source" json:"source"`
	Split      string     `parquet:"split" json:"split"`
	Problem    string     `parquet:"problem" json:"problem"`
	Answer     string     `parquet:"answer" json:"answer"`
	Reference  *string    `parquet:"reference,optional" json:"reference,omitempty"`
	Style      string     `parquet:"style" json:"style"`
	Rubric     []Item     `parquet:"rubric,list" json:"rubric"`
	Rollouts   []Rollout  `parquet:"rollouts,list" json:"rollouts"`
	NCorrect   int32      `parquet:"n_correct" json:"n_correct"`
	PassRate   float64    `parquet:"pass_rate" json:"pass_rate"`
	Provenance Provenance `parquet:"provenance" json:"provenance"`
	Usage      Usage      `parquet:"usage" json:"usage"`
	// Grounded is the payload of a grounded-style record (style
	// "grounded"): the passage, its analysis and its questions with their
	// criteria. Nil for the math styles. For a grounded record Problem and
	// Answer are empty and Rubric and Rollouts are empty lists.
	Grounded *Grounded `parquet:"grounded,optional" json:"grounded,omitempty"`
	// Panel holds every judge's own verdicts when a stage asked a panel of
	// judges, and the judges' order seed when their orders were shuffled;
	// nil when every stage had one judge in rubric order (see Panel).
	Panel *Panel `parquet:"panel,optional" json:"panel,omitempty"`
}
