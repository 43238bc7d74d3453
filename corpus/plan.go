package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rubricforge/rubricforge/internal/figures"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// This file is RUN/plan.json, the document distill plan (package plan)
// writes and distill status and batch pricing (package pipeline) read.

// PlanName is the plan's file in the run directory, beside report.json.
const PlanName = "plan.json"

// PlanDoc is RUN/plan.json: what distill plan projects for the whole input
// from its pilot. Every PlanRange is the figure from the pilot's problems with
// a 95% bootstrap interval over them.
type PlanDoc struct {
	Created        time.Time `json:"created"`
	JobFingerprint string    `json:"job_fingerprint"`
	PilotSeconds   float64   `json:"pilot_seconds"`
	// Style is the job's; a grounded job's units are passages.
	Style string    `json:"style,omitempty"`
	Input PlanInput `json:"input"`
	// Sampled is the size of the sample; Measured the sampled problems
	// whose figures the projection stands on.
	Sampled  int `json:"sampled"`
	Measured int `json:"measured"`
	// CostCounted is false when the job has no prices: cost is then not
	// projected.
	CostCounted bool              `json:"cost_counted"`
	Stages      []StageProjection `json:"stages"`
	Total       StageProjection   `json:"total"`
	Tokens      PlanRange         `json:"tokens"` // prompt and completion, every stage
	Records     PlanRange         `json:"records"`
	LeftOut     PlanRange         `json:"left_out"`
	Failed      PlanRange         `json:"failed"`
	// Validity is the share of judged rubric items found valid; absent
	// when the judge is off.
	Validity *PlanRange `json:"validity,omitempty"`
	// EmpiricalValidity is the share of measured items empirically valid;
	// absent when the empirical stage is off.
	EmpiricalValidity *PlanRange     `json:"empirical_validity,omitempty"`
	ItemsPerRecord    PlanRange      `json:"items_per_record"`
	Wall              WallProjection `json:"wall"`
	Budget            []BudgetCheck  `json:"budget,omitempty"`
	Endpoints         []PlanEndpoint `json:"endpoints"`
	Pilot             []PilotProblem `json:"pilot_problems"`
	// BatchStages are the stages in batch mode, priced at the batch rate.
	BatchStages []string `json:"batch_stages,omitempty"`
	// SpentUSD is what the run directory has spent so far (the pilot's
	// requests, sent online even for stages in batch mode): the run
	// reuses those answers, and its budget counts what they cost.
	// WithSpent adds the projection of the problems the pilot left
	// (Total × Rest/Unique): what the plan and the run cost together.
	SpentUSD  float64    `json:"spent_usd,omitempty"`
	WithSpent *PlanRange `json:"with_spent_usd,omitempty"`
}

// PlanInput is the input as the plan counted it (in the job's partition).
type PlanInput struct {
	Rows       int64            `json:"rows"`
	BadLines   int64            `json:"bad_lines"`
	Duplicates int64            `json:"duplicates"`
	Unique     int64            `json:"unique"`
	Sources    map[string]int64 `json:"sources"`
	// Rest is the problems distill run has left after the pilot.
	Rest int64 `json:"rest"`
	// KnownLeftOut counts the passages of a grounded job that the passage
	// stage leaves out before any request (shorter than
	// grounded.min_passage_chars, no text, over --passage-chars): known from
	// the input, never sampled, left out in the projection at no cost.
	KnownLeftOut int64 `json:"known_left_out,omitempty"`
}

// PlanRange is a projected figure with its interval.
type PlanRange struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// StageProjection is one stage's projected requests, tokens and cost.
type StageProjection struct {
	Stage        string    `json:"stage"`
	Requests     PlanRange `json:"requests"`
	PromptTokens PlanRange `json:"prompt_tokens"`
	// CachedPromptTokens are the PromptTokens the server's prefix cache
	// is projected to reuse, as it did in the pilot; absent when it
	// reported none.
	CachedPromptTokens *PlanRange `json:"cached_prompt_tokens,omitempty"`
	CompletionTokens   PlanRange  `json:"completion_tokens"`
	CostUSD            PlanRange  `json:"cost_usd"`
}

// WallProjection is the wall time of distill run for the problems the
// pilot left, the constraint that sets it, and what relaxing it buys.
type WallProjection struct {
	// WholeSeconds is the wall time of the whole input in one run;
	// RestSeconds that of the problems the pilot left.
	WholeSeconds PlanRange   `json:"whole_seconds"`
	RestSeconds  PlanRange   `json:"rest_seconds"`
	Binding      string      `json:"binding"` // concurrency, rate limit, problems in flight, latency
	Bounds       []WallBound `json:"bounds"`
	// Relief says what changing the binding constraint would buy.
	Relief string `json:"relief"`
}

// WallBound is the wall time one constraint alone would set, for the rest.
type WallBound struct {
	Constraint string  `json:"constraint"`
	Seconds    float64 `json:"seconds"`
}

// BudgetCheck compares the projection with one budget of the job.
type BudgetCheck struct {
	Limit     string    `json:"limit"` // max_cost_usd or max_tokens
	Value     float64   `json:"value"`
	Projected PlanRange `json:"projected"`
	// Covers is the share of the input the budget is projected to pay for
	// (1 when it covers it all).
	Covers float64 `json:"covers"`
}

// PlanEndpoint is one endpoint's limits as the projection assumes them.
type PlanEndpoint struct {
	BaseURL     string   `json:"base_url"`
	Stages      []string `json:"stages"`
	Concurrency int      `json:"concurrency"`
	// RequestsPerMinute and TokensPerMinute are 0 without a limit; their
	// source is "configured" (the job's limits) or "announced" (the
	// server's x-ratelimit-* headers seen in the pilot).
	RequestsPerMinute float64 `json:"requests_per_minute,omitempty"`
	TokensPerMinute   float64 `json:"tokens_per_minute,omitempty"`
	LimitSource       string  `json:"limit_source,omitempty"`
}

// PilotProblem is what one sampled problem took: the figures a plan
// projects from, kept in plan.json so that a later plan of the same job
// reuses them instead of paying again.
type PilotProblem struct {
	ID      string `json:"id"`
	Source  string `json:"source,omitempty"`
	Outcome string `json:"outcome"` // OutcomeRecord, OutcomeLeftOut or OutcomeFailed
	// Seconds is the time at least one of its requests was in flight: the
	// latency of its own chain of stages, without waiting for a slot.
	Seconds float64 `json:"seconds"`
	// RequestSeconds adds up the time each of its requests took, by the
	// endpoint's base URL: what it holds of the endpoint's concurrency.
	RequestSeconds map[string]float64 `json:"request_seconds"`
	// Stages is what its requests cost, by stage; the tokens of a request
	// answered from the cache are counted (the real run pays for them).
	Stages map[string]schema.Usage `json:"stages"`
	// CachedPrompt are the prompt tokens of Stages that the server's
	// prefix cache reused, by stage; absent when it reported none.
	CachedPrompt map[string]int64 `json:"cached_prompt_tokens,omitempty"`
	// Items, Judged and Valid count the rubric items of a record (a
	// grounded record's criteria), those the judge ruled on and those it
	// found valid.
	Items  int64 `json:"items,omitempty"`
	Judged int64 `json:"judged,omitempty"`
	Valid  int64 `json:"valid,omitempty"`
	// Measured and EmpiricallyValid count the items whose empirical
	// validity was measured, and those found valid (a grounded criterion:
	// whose score varies across the closed-book answers).
	Measured         int64 `json:"empirically_measured,omitempty"`
	EmpiricallyValid int64 `json:"empirically_valid,omitempty"`
}

// The outcomes of a sampled problem.
const (
	OutcomeRecord  = "record"
	OutcomeLeftOut = "left_out" // by selection, or a grounded job's quality checks
	OutcomeFailed  = "failed"
)

// CountItems counts a record's rubric items (a grounded record's
// criteria, over its questions), those judged and found valid, and those
// measured empirically and found valid (for a criterion: its score varies
// across the closed-book answers).
func (pp *PilotProblem) CountItems(r *schema.Record) {
	count := func(valid, empirical *bool) {
		pp.Items++
		if valid != nil {
			pp.Judged++
			if *valid {
				pp.Valid++
			}
		}
		if empirical != nil {
			pp.Measured++
			if *empirical {
				pp.EmpiricallyValid++
			}
		}
	}
	for _, it := range r.Rubric {
		count(it.Valid, it.EmpiricalValid)
	}
	if g := r.Grounded; g != nil {
		for _, q := range g.Questions {
			for _, c := range q.Criteria {
				count(c.Valid, c.Varies)
			}
		}
	}
}

// ReadPlan reads RUN/plan.json; nil without error when there is none.
func ReadPlan(dir string) (*PlanDoc, error) {
	b, err := os.ReadFile(filepath.Join(dir, PlanName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading plan: %w", err)
	}
	var p PlanDoc
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, PlanName), err)
	}
	return &p, nil
}

// WritePlan writes RUN/plan.json atomically.
func WritePlan(fsy fsys.FS, dir string, p *PlanDoc) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := fsys.WriteFileAtomic(fsy, filepath.Join(dir, PlanName), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing plan: %w", err)
	}
	return nil
}

// Count renders the figure with its interval: 1,200 (1,100-1,300).
func (r PlanRange) Count() string { return figures.CountRange(r.Value, r.Low, r.High) }

// Money renders a cost with its interval: $4,210 (3,900-4,560).
func (r PlanRange) Money() string { return figures.Money(r.Value, r.Low, r.High) }
