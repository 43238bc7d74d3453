package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/schema"
)

// Job is everything that defines a run. It is read from a YAML job file and
// overridden by flags; the normalized form is written to RUN/job.yaml. It holds
// no secrets: API keys are read from the environment variables it names.
type Job struct {
	Input      Input            `yaml:"input"`
	Out        string           `yaml:"out"`
	Style      string           `yaml:"style"`
	Rollout    RolloutStage     `yaml:"rollout"`
	Distill    DistillStage     `yaml:"distill"`
	Judge      JudgeStage       `yaml:"judge"`
	Empirical  EmpiricalStage   `yaml:"empirical"`
	Selection  Selection        `yaml:"selection"`
	Split      SplitFractions   `yaml:"split"`
	Limits     Limits           `yaml:"limits"`
	Prices     map[string]Price `yaml:"prices,omitempty"`
	Budget     Budget           `yaml:"budget"`
	Output     Output           `yaml:"output"`
	PromptsDir string           `yaml:"prompts_dir,omitempty"`
	// Cache is the response cache file; empty means RUN/cache.db. Runs that
	// name one file share every answered request (one process at a time).
	Cache string `yaml:"cache,omitempty"`
	// TemplateHashes is written by the run (RUN/job.yaml) so that a later
	// refusal can say which template changed; a job file's value is ignored.
	TemplateHashes map[string]string `yaml:"template_hashes,omitempty"`
}

// Input says where problems come from and which fields hold what.
type Input struct {
	Paths        []string `yaml:"paths"`
	Format       string   `yaml:"format"` // auto, jsonl or parquet
	Source       string   `yaml:"source"` // source name for rows without a source field
	Fields       Fields   `yaml:"fields"`
	MaxLineBytes int      `yaml:"max_line_bytes"`
}

// Fields maps record fields to input field names. Empty optional names mean
// the input has no such field.
type Fields struct {
	Problem   string `yaml:"problem"`
	Answer    string `yaml:"answer"`
	ID        string `yaml:"id,omitempty"`
	Source    string `yaml:"source,omitempty"`
	Reference string `yaml:"reference,omitempty"`
}

// Endpoint is where a stage sends its requests.
type Endpoint struct {
	BaseURL   string `yaml:"base_url,omitempty"`
	Model     string `yaml:"model,omitempty"`
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	// LegacyMaxTokens sends the token limit as max_tokens, for servers that
	// do not know max_completion_tokens.
	LegacyMaxTokens bool `yaml:"legacy_max_tokens,omitempty"`
}

// Sampling holds the sampling parameters of a stage. Nil means the server's default.
type Sampling struct {
	Temperature *float64 `yaml:"temperature,omitempty"`
	TopP        *float64 `yaml:"top_p,omitempty"`
	MaxTokens   int      `yaml:"max_tokens,omitempty"`
}

// RolloutStage configures sampling of solutions.
type RolloutStage struct {
	Endpoint `yaml:",inline"`
	Sampling `yaml:",inline"`
	N        int `yaml:"n"`
	// PerRequest is how many samples one request asks for (the n parameter).
	// 1 sends one request per sample, which lets a larger N reuse cached samples.
	PerRequest int   `yaml:"per_request"`
	Seed       int64 `yaml:"seed"`
}

// DistillStage configures rubric distillation.
type DistillStage struct {
	Endpoint         `yaml:",inline"`
	Sampling         `yaml:",inline"`
	MaxSolutions     int `yaml:"max_solutions"`      // solutions shown to the distiller, correct and flawed together
	MaxSolutionChars int `yaml:"max_solution_chars"` // each solution is cut to this many characters
	MaxItems         int `yaml:"max_items"`
	RepairAttempts   int `yaml:"repair_attempts"`
}

// JudgeStage configures the validity judge.
type JudgeStage struct {
	Endpoint       `yaml:",inline"`
	Sampling       `yaml:",inline"`
	Enabled        bool   `yaml:"enabled"`
	Mode           string `yaml:"mode"` // batch: one call per problem; item: one call per item
	DropInvalid    bool   `yaml:"drop_invalid"`
	RepairAttempts int    `yaml:"repair_attempts"`
}

// EmpiricalStage configures empirical validity: every rollout judged against
// the rubric, and each item's satisfaction correlated with correctness.
type EmpiricalStage struct {
	Endpoint       `yaml:",inline"`
	Sampling       `yaml:",inline"`
	Enabled        bool    `yaml:"enabled"`
	Alpha          float64 `yaml:"alpha"`
	RepairAttempts int     `yaml:"repair_attempts"`
}

// Selection says which problems go on to distillation, by their number of
// correct and flawed rollouts.
type Selection struct {
	MinCorrect   int `yaml:"min_correct"`
	MinIncorrect int `yaml:"min_incorrect"`
}

// SplitFractions assigns splits deterministically from the problem id.
type SplitFractions struct {
	Validation float64 `yaml:"validation"`
	Test       float64 `yaml:"test"`
}

// Limits bounds concurrency and rates.
type Limits struct {
	Concurrency       int           `yaml:"concurrency"` // requests in flight per endpoint
	ProblemsInFlight  int           `yaml:"problems_in_flight"`
	RequestsPerMinute float64       `yaml:"requests_per_minute,omitempty"`
	TokensPerMinute   float64       `yaml:"tokens_per_minute,omitempty"`
	AttemptTimeout    time.Duration `yaml:"attempt_timeout"`
	MaxAttempts       int           `yaml:"max_attempts"`
	// BackoffMax caps the wait between attempts, Retry-After included.
	BackoffMax time.Duration `yaml:"backoff_max"`
}

// Price is USD per million tokens for one model.
type Price struct {
	Prompt     float64 `yaml:"prompt_per_mtok"`
	Completion float64 `yaml:"completion_per_mtok"`
}

// Budget stops a run cleanly, resumable, once spent. Zero means no limit.
type Budget struct {
	MaxCostUSD float64 `yaml:"max_cost_usd,omitempty"`
	MaxTokens  int64   `yaml:"max_tokens,omitempty"`
}

// Output configures shards and checkpoints.
type Output struct {
	ShardRows          int           `yaml:"shard_rows"`
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
}

// DefaultJob is a job with every default set and no input, output or endpoint.
func DefaultJob() Job {
	one := 1.0
	zero := 0.0
	return Job{
		Input: Input{Format: "auto", Fields: Fields{Problem: "problem", Answer: "answer", ID: "id", Source: "source", Reference: "solution"}, MaxLineBytes: 4 << 20},
		Style: schema.StyleSRaR,
		Rollout: RolloutStage{
			Endpoint:   Endpoint{APIKeyEnv: "OPENAI_API_KEY"},
			Sampling:   Sampling{Temperature: &one},
			N:          8,
			PerRequest: 1,
		},
		Distill:   DistillStage{Sampling: Sampling{Temperature: &zero}, MaxSolutions: 8, MaxSolutionChars: 6000, MaxItems: 12, RepairAttempts: 2},
		Judge:     JudgeStage{Sampling: Sampling{Temperature: &zero}, Enabled: true, Mode: "batch", RepairAttempts: 2},
		Empirical: EmpiricalStage{Sampling: Sampling{Temperature: &zero}, Alpha: 0.2, RepairAttempts: 1},
		Selection: Selection{MinCorrect: 1, MinIncorrect: 1},
		Split:     SplitFractions{Validation: 0.02},
		Limits:    Limits{Concurrency: 64, AttemptTimeout: 10 * time.Minute, MaxAttempts: 6, BackoffMax: time.Minute},
		Output:    Output{ShardRows: 1000, CheckpointInterval: 30 * time.Second},
	}
}

// LoadJobFile reads a YAML job file over the defaults. Unknown keys are errors.
func LoadJobFile(path string) (Job, error) {
	job := DefaultJob()
	b, err := os.ReadFile(path)
	if err != nil {
		return job, fmt.Errorf("reading job file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&job); err != nil {
		return job, fmt.Errorf("job file %s: %w", path, err)
	}
	return job, nil
}

// stageEndpoint is a stage's endpoint with the rollout endpoint filled in
// where the stage names none.
func (j *Job) stageEndpoint(e Endpoint) Endpoint {
	if e.BaseURL == "" {
		e.BaseURL = j.Rollout.BaseURL
	}
	if e.Model == "" {
		e.Model = j.Rollout.Model
	}
	if e.APIKeyEnv == "" {
		e.APIKeyEnv = j.Rollout.APIKeyEnv
	}
	if e.BaseURL == j.Rollout.BaseURL {
		e.LegacyMaxTokens = e.LegacyMaxTokens || j.Rollout.LegacyMaxTokens
	}
	return e
}

// Normalize fills inherited endpoints and derived defaults. Call it after
// flags are applied and before Validate.
func (j *Job) Normalize() {
	j.Distill.Endpoint = j.stageEndpoint(j.Distill.Endpoint)
	j.Judge.Endpoint = j.stageEndpoint(j.Judge.Endpoint)
	j.Empirical.Endpoint = j.stageEndpoint(j.Empirical.Endpoint)
	if j.Limits.ProblemsInFlight <= 0 {
		j.Limits.ProblemsInFlight = max(1, j.Limits.Concurrency)
	}
	if j.Rollout.PerRequest <= 0 {
		j.Rollout.PerRequest = 1
	}
	if j.Input.Format == "" {
		j.Input.Format = "auto"
	}
}

// Validate reports every problem with the job at once, naming each field.
func (j *Job) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(j.Input.Paths) == 0 {
		bad("input.paths", "no input file given (use --input or input.paths)")
	}
	switch j.Input.Format {
	case "auto", "jsonl", "parquet":
	default:
		bad("input.format", "%q is not one of auto, jsonl, parquet", j.Input.Format)
	}
	if j.Input.Fields.Problem == "" || j.Input.Fields.Answer == "" {
		bad("input.fields", "problem and answer field names are required")
	}
	if j.Input.MaxLineBytes <= 0 {
		bad("input.max_line_bytes", "must be positive")
	}
	if j.Out == "" {
		bad("out", "no run directory given (use --out or out)")
	}
	switch j.Style {
	case schema.StyleSRaR, schema.StyleFactualProcess:
	default:
		bad("style", "%q is not one of %s, %s", j.Style, schema.StyleSRaR, schema.StyleFactualProcess)
	}
	checkEndpoint := func(stage string, e Endpoint) {
		if e.BaseURL == "" {
			bad(stage+".base_url", "no endpoint given (use --base-url)")
		} else if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(stage+".base_url", "%q is not an http(s) URL", e.BaseURL)
		} else if u.User != nil {
			bad(stage+".base_url", "must not carry credentials; name an environment variable in api_key_env")
		}
		if e.Model == "" {
			bad(stage+".model", "no model given (use --model)")
		}
	}
	checkEndpoint("rollout", j.Rollout.Endpoint)
	checkEndpoint("distill", j.Distill.Endpoint)
	if j.Judge.Enabled {
		checkEndpoint("judge", j.Judge.Endpoint)
	}
	if j.Empirical.Enabled {
		checkEndpoint("empirical", j.Empirical.Endpoint)
	}
	if j.Rollout.N < 1 || j.Rollout.N > 1024 {
		bad("rollout.n", "%d is outside 1..1024", j.Rollout.N)
	}
	if j.Rollout.PerRequest > j.Rollout.N {
		bad("rollout.per_request", "%d is larger than n=%d", j.Rollout.PerRequest, j.Rollout.N)
	}
	if j.Distill.MaxSolutions < 1 {
		bad("distill.max_solutions", "must be at least 1")
	}
	if j.Distill.MaxSolutionChars < 200 {
		bad("distill.max_solution_chars", "must be at least 200")
	}
	if j.Distill.MaxItems < 2 || j.Distill.MaxItems > 64 {
		bad("distill.max_items", "%d is outside 2..64", j.Distill.MaxItems)
	}
	if j.Judge.Mode != "batch" && j.Judge.Mode != "item" {
		bad("judge.mode", "%q is not batch or item", j.Judge.Mode)
	}
	for name, n := range map[string]int{"distill.repair_attempts": j.Distill.RepairAttempts, "judge.repair_attempts": j.Judge.RepairAttempts, "empirical.repair_attempts": j.Empirical.RepairAttempts} {
		if n < 0 || n > 10 {
			bad(name, "%d is outside 0..10", n)
		}
	}
	if j.Empirical.Alpha < -1 || j.Empirical.Alpha >= 1 {
		bad("empirical.alpha", "%g is outside [-1, 1)", j.Empirical.Alpha)
	}
	if j.Selection.MinCorrect < 0 || j.Selection.MinIncorrect < 0 {
		bad("selection", "min_correct and min_incorrect must not be negative")
	}
	if j.Selection.MinCorrect+j.Selection.MinIncorrect > j.Rollout.N {
		bad("selection", "min_correct + min_incorrect = %d needs more than n=%d rollouts", j.Selection.MinCorrect+j.Selection.MinIncorrect, j.Rollout.N)
	}
	if j.Split.Validation < 0 || j.Split.Test < 0 || j.Split.Validation+j.Split.Test > 1 {
		bad("split", "validation and test must be non-negative and add up to at most 1")
	}
	if j.Limits.Concurrency < 1 || j.Limits.Concurrency > 16384 {
		bad("limits.concurrency", "%d is outside 1..16384", j.Limits.Concurrency)
	}
	if j.Limits.MaxAttempts < 1 {
		bad("limits.max_attempts", "must be at least 1")
	}
	if j.Limits.AttemptTimeout <= 0 {
		bad("limits.attempt_timeout", "must be positive")
	}
	if j.Limits.BackoffMax <= 0 {
		bad("limits.backoff_max", "must be positive")
	}
	if j.Budget.MaxCostUSD < 0 || j.Budget.MaxTokens < 0 {
		bad("budget", "limits must not be negative")
	}
	if j.Output.ShardRows < 1 {
		bad("output.shard_rows", "must be at least 1")
	}
	if j.Output.CheckpointInterval < time.Second {
		bad("output.checkpoint_interval", "must be at least 1s")
	}
	for model, p := range j.Prices {
		if p.Prompt < 0 || p.Completion < 0 {
			bad("prices."+model, "prices must not be negative")
		}
	}
	return errors.Join(errs...)
}

// Fingerprint identifies what the run produces: the inputs' identity is not in
// it (new input lines simply add problems), but everything that changes a
// record's content is. Limits, budget, prices, output layout and endpoint URLs
// are not part of it: changing them does not change what a record holds.
func (j *Job) Fingerprint(templateHashes map[string]string) string {
	var b strings.Builder
	w := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	w("spec", schema.SpecVersion)
	w("style", j.Style)
	w("fields", fmt.Sprintf("%+v", j.Input.Fields))
	w("rollout", fmt.Sprintf("%s|%s|%d|%d|%d", j.Rollout.Model, samplingString(j.Rollout.Sampling), j.Rollout.N, j.Rollout.PerRequest, j.Rollout.Seed))
	w("distill", fmt.Sprintf("%s|%s|%d|%d|%d|%d", j.Distill.Model, samplingString(j.Distill.Sampling), j.Distill.MaxSolutions, j.Distill.MaxSolutionChars, j.Distill.MaxItems, j.Distill.RepairAttempts))
	w("judge", fmt.Sprintf("%v|%s|%s|%s|%v|%d", j.Judge.Enabled, j.Judge.Model, samplingString(j.Judge.Sampling), j.Judge.Mode, j.Judge.DropInvalid, j.Judge.RepairAttempts))
	w("empirical", fmt.Sprintf("%v|%s|%s|%g|%d", j.Empirical.Enabled, j.Empirical.Model, samplingString(j.Empirical.Sampling), j.Empirical.Alpha, j.Empirical.RepairAttempts))
	w("selection", fmt.Sprintf("%d|%d", j.Selection.MinCorrect, j.Selection.MinIncorrect))
	w("split", fmt.Sprintf("%g|%g", j.Split.Validation, j.Split.Test))
	names := make([]string, 0, len(templateHashes))
	for n := range templateHashes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w("template."+n, templateHashes[n])
	}
	return fmt.Sprintf("%016x", xxhash.Sum64String(b.String()))
}

// FingerprintFields lists the job settings that enter the fingerprint, as
// printable lines, so a refusal can say what changed.
func (j *Job) FingerprintFields(templateHashes map[string]string) map[string]string {
	out := map[string]string{
		"style":               j.Style,
		"input.fields":        fmt.Sprintf("%+v", j.Input.Fields),
		"rollout.model":       j.Rollout.Model,
		"rollout.sampling":    samplingString(j.Rollout.Sampling),
		"rollout.n":           fmt.Sprint(j.Rollout.N),
		"rollout.per_request": fmt.Sprint(j.Rollout.PerRequest),
		"rollout.seed":        fmt.Sprint(j.Rollout.Seed),
		"distill.model":       j.Distill.Model,
		"distill.sampling":    samplingString(j.Distill.Sampling),
		"distill.limits":      fmt.Sprintf("max_solutions=%d max_solution_chars=%d max_items=%d repair_attempts=%d", j.Distill.MaxSolutions, j.Distill.MaxSolutionChars, j.Distill.MaxItems, j.Distill.RepairAttempts),
		"judge":               fmt.Sprintf("enabled=%v model=%s sampling=%s mode=%s drop_invalid=%v repair_attempts=%d", j.Judge.Enabled, j.Judge.Model, samplingString(j.Judge.Sampling), j.Judge.Mode, j.Judge.DropInvalid, j.Judge.RepairAttempts),
		"empirical":           fmt.Sprintf("enabled=%v model=%s sampling=%s alpha=%g", j.Empirical.Enabled, j.Empirical.Model, samplingString(j.Empirical.Sampling), j.Empirical.Alpha),
		"selection":           fmt.Sprintf("min_correct=%d min_incorrect=%d", j.Selection.MinCorrect, j.Selection.MinIncorrect),
		"split":               fmt.Sprintf("validation=%g test=%g", j.Split.Validation, j.Split.Test),
	}
	for n, h := range templateHashes {
		out["template."+n] = h
	}
	return out
}

func samplingString(s Sampling) string {
	f := func(p *float64) string {
		if p == nil {
			return "default"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("temperature=%s top_p=%s max_tokens=%d", f(s.Temperature), f(s.TopP), s.MaxTokens)
}

// YAML is the normalized job as written to RUN/job.yaml.
func (j *Job) YAML() ([]byte, error) {
	return yaml.Marshal(j)
}
