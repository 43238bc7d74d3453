package job

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
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
	Grounded   GroundedStage    `yaml:"grounded"`
	Selection  Selection        `yaml:"selection"`
	Split      SplitFractions   `yaml:"split"`
	Limits     Limits           `yaml:"limits"`
	Prices     map[string]Price `yaml:"prices,omitempty"`
	Budget     Budget           `yaml:"budget"`
	Output     Output           `yaml:"output"`
	Batch      BatchSettings    `yaml:"batch,omitempty"`
	JSONObject JSONObjectStages `yaml:"json_object"`
	PromptsDir string           `yaml:"prompts_dir,omitempty"`
	// Cache is the response cache file; empty means RUN/cache.db. Runs that
	// name one file share every answered request (one process at a time).
	Cache string `yaml:"cache,omitempty"`
	// Partition is "I/K" when this run is worker I of K that split the
	// input between them (see Partition); empty for the whole input.
	Partition string `yaml:"partition,omitempty"`
	// TemplateHashes and Versions are written by the run into RUN/job.yaml,
	// so that a later refusal can say which template or version changed. A
	// job file's values are ignored.
	TemplateHashes map[string]string `yaml:"template_hashes,omitempty"`
	Versions       map[string]string `yaml:"versions,omitempty"`
}

// Input says where problems come from and which fields hold what.
type Input struct {
	// Paths are JSONL files (also .jsonl.gz and .jsonl.zst) or Parquet files.
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
	// Text and Title are a document's fields (the grounded style); the
	// id and source fields serve documents too.
	Text  string `yaml:"text,omitempty"`
	Title string `yaml:"title,omitempty"`
}

// Endpoint is where a stage sends its requests.
type Endpoint struct {
	BaseURL   string `yaml:"base_url,omitempty"`
	Model     string `yaml:"model,omitempty"`
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	// LegacyMaxTokens sends the token limit as max_tokens, for servers that
	// do not know max_completion_tokens.
	LegacyMaxTokens bool `yaml:"legacy_max_tokens,omitempty"`
	// Mode is online (the default), batch (the provider's Batch API, at
	// its batch price) or auto (batch when the endpoint has a Batch API).
	// It is not part of the job's identity: a run may switch. The job
	// file's key is request_mode, since judge.mode says something else.
	Mode string `yaml:"request_mode,omitempty"`
	// Kind is the server family behind BaseURL (openai, vllm, sglang, or
	// any other lower-case name), a part of every judge verdict's cache key
	// so that one family's verdicts are not replayed as another's; empty
	// takes llm.EndpointKind's default from the base URL (openai for
	// api.openai.com, else openai-compatible). Not part of the job's
	// identity, like the base URL.
	Kind string `yaml:"endpoint_kind,omitempty"`
}

// EndpointKind is the endpoint's kind: its endpoint_kind, else the default
// of its base URL (llm.EndpointKind).
func (e Endpoint) EndpointKind() string { return llm.EndpointKind(e.Kind, e.BaseURL) }

// JudgeSeed pins the sampling seed a judging stage (judge, empirical) asks
// its judges with, so a verdict asked again is asked the same way where
// the server honours seeds. Seed is sent with every judge request (default
// 0); NoSeed sends none, for a server that refuses the seed parameter.
type JudgeSeed struct {
	Seed   int64 `yaml:"seed"`
	NoSeed bool  `yaml:"no_seed,omitempty"`
}

// Sent is the seed a judge request carries: nil with no_seed.
func (p JudgeSeed) Sent() *int64 {
	if p.NoSeed {
		return nil
	}
	seed := p.Seed
	return &seed
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
	JudgeSeed      `yaml:",inline"`
	// Panel, when it lists judges, has every item judged by each of them
	// and keeps their strict majority (see PanelJudge and schema.Panel);
	// the stage's own endpoint and sampling are then the judges' defaults.
	Panel []PanelJudge `yaml:"panel,omitempty"`
	// Order is how a judge shown several items at once (judge batch mode,
	// the satisfaction judge, the grounded scorer) sees them, in this stage
	// and the empirical one: OrderShuffled (the default) in an order drawn
	// per judge and per record from OrderSeed, or OrderRubric in rubric
	// order (as before judge orders existed). See OrderPermutation.
	Order     string `yaml:"order,omitempty"`
	OrderSeed int64  `yaml:"order_seed,omitempty"`
	// Layout is where the judge prompts of this stage and the empirical
	// one put what varies (prompts.Layout): cache (the default) puts the
	// response (the item, the criterion) last, so that a server's prefix
	// cache computes the rest once per record; paper keeps the seeds'
	// order. A job.yaml without it was made with the paper layout.
	Layout string `yaml:"layout,omitempty"`
	// Group has the empirical stage ask each judge about all rollouts of
	// a record (all answers of a grounded question) in one request, each
	// in its own block under a name, in an order drawn per request, the
	// verdicts mapped back by name (prompts' group templates): fewer,
	// larger requests that send the rubric once. A group request whose
	// reply is unusable, or a group too long for the response budget
	// (empirical.max_response_tokens), is asked one response (one part)
	// at a time. Off by default: a judge may grade a response differently
	// beside others; needs the cache layout.
	Group bool `yaml:"group,omitempty"`
}

// EmpiricalStage configures empirical validity: every rollout judged against
// the rubric, and each item's satisfaction correlated with correctness.
type EmpiricalStage struct {
	Endpoint       `yaml:",inline"`
	Sampling       `yaml:",inline"`
	Enabled        bool    `yaml:"enabled"`
	Alpha          float64 `yaml:"alpha"`
	RepairAttempts int     `yaml:"repair_attempts"`
	// OpenBook (grounded style): besides the rollout.n closed-book answers,
	// sample rollout.n answers with the passage in the prompt and score them
	// the same way, so each criterion's edge (open-book minus closed-book
	// mean score, over its weight) says whether it rewards knowing the
	// passage. Twice the stage's requests; ignored by the math styles.
	OpenBook  bool `yaml:"open_book"`
	JudgeSeed `yaml:",inline"`
	// MaxResponseTokens is the most estimated tokens of a rollout (a
	// grounded answer) the judge is shown (prompts.View): a longer one is
	// shown head and tail, and every PITFALL counts as fallen into in it.
	// 0 (or absent) is the default, prompts.DefaultJudgeMaxResponseTokens;
	// -1 shows every response whole. A job.yaml without it showed them
	// whole.
	MaxResponseTokens int `yaml:"max_response_tokens,omitempty"`
	// Panel, when it lists judges, has every rollout (every grounded
	// answer) judged by each of them and keeps the panel's verdicts (see
	// PanelJudge and schema.Panel).
	Panel []PanelJudge `yaml:"panel,omitempty"`
}

// GroundedStage configures the grounded style (seed 001): how documents
// are cut into passages, how many questions each passage gets, and the
// quality checks every question-rubric tuple passes before it is written.
// The analyze, synthesize and enrich stages use the distill endpoint,
// sampling and repair attempts; the validity judge the judge's; the
// empirical stage samples rollout.n closed-book answers (and, with
// empirical.open_book, rollout.n open-book ones) from the rollout endpoint
// and scores them with the empirical endpoint.
type GroundedStage struct {
	PassageChars int `yaml:"passage_chars"` // a passage's most characters
	// MinPassageChars is a passage's fewest characters: the cutter merges a
	// shorter piece into a neighbour where the limit allows, and a passage
	// still shorter is left out at the passage stage without a request. At
	// most half of PassageChars counts; 0 keeps every passage.
	MinPassageChars     int     `yaml:"min_passage_chars"`
	QuestionsPerPassage int     `yaml:"questions_per_passage"` // K
	MinCriteria         int     `yaml:"min_criteria"`
	MaxCriteria         int     `yaml:"max_criteria"`
	MinTotalWeight      float64 `yaml:"min_total_weight"`
	// MaxCopiedWords is the longest run of the passage's words a question
	// may copy; a longer verbatim overlap fails the quality check.
	MaxCopiedWords int `yaml:"max_copied_words"`
	// Enrich enriches every criterion (verification method, keywords,
	// concepts) with the document's analysis in view, in one more request
	// per question.
	Enrich bool `yaml:"enrich"`
	// JudgePassageTokens is the most estimated tokens of the passage the
	// validity judge and the empirical stage's scorer are shown
	// (prompts.FitPassage): a longer passage is cut there, with a note
	// saying so; the record keeps the whole passage.
	JudgePassageTokens int `yaml:"judge_passage_tokens"`
	// AnalysisChars is how much of a document's beginning its analysis
	// reads (with the outline of all of it), in characters; the analysis is
	// asked once per document and given to all its passages.
	AnalysisChars int `yaml:"analysis_chars"`
}

// JSONObjectStages (not part of the job's fingerprint: how a request is
// sent, like legacy_max_tokens) says which stages send response_format
// {"type":"json_object"} with their requests (the stages whose reply is one
// JSON object): on by default, since vLLM, SGLang and OpenAI take it; a
// server that refuses it (400) fails every request of a stage left on, so
// turn it off there (json_object: {analyze: false, ...}). The reply is
// parsed and repaired the same either way.
type JSONObjectStages struct {
	Analyze    bool `yaml:"analyze"`    // the grounded analysis
	Synthesize bool `yaml:"synthesize"` // the grounded questions and rubrics
	Judge      bool `yaml:"judge"`      // the validity judge in item mode (math and grounded)
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
	Concurrency int `yaml:"concurrency"` // requests in flight per endpoint
	// ProblemsInFlight is the most problems worked on at once (a new one
	// starts when the rollout endpoint can take its rollouts); 0 derives it
	// from the concurrency and a memory budget (see problemsInFlight).
	ProblemsInFlight  int           `yaml:"problems_in_flight"`
	RequestsPerMinute float64       `yaml:"requests_per_minute,omitempty"`
	TokensPerMinute   float64       `yaml:"tokens_per_minute,omitempty"`
	AttemptTimeout    time.Duration `yaml:"attempt_timeout"`
	MaxAttempts       int           `yaml:"max_attempts"`
	// BackoffMax caps the wait between attempts, Retry-After included.
	BackoffMax time.Duration `yaml:"backoff_max"`
}

// Price is USD per million tokens for one model. In a job file a model that
// costs nothing may be written `MODEL: 0`.
type Price struct {
	Prompt float64 `yaml:"prompt_per_mtok"`
	// CachedPrompt prices the prompt tokens a server's prefix cache reused
	// (usage.prompt_tokens_details.cached_tokens; the hosted APIs charge a
	// fraction of the prompt price); 0: the prompt price.
	CachedPrompt float64 `yaml:"cached_prompt_per_mtok,omitempty"`
	Completion   float64 `yaml:"completion_per_mtok"`
	// BatchRate is the share of the price a request answered through the
	// Batch API costs (0: half, OpenAI's rate).
	BatchRate float64 `yaml:"batch_rate,omitempty"`
}

// Budget stops a run cleanly, resumable, once spent. Zero means no limit.
// It counts what every session of the run spent, not only the current one.
type Budget struct {
	MaxCostUSD float64 `yaml:"max_cost_usd,omitempty"`
	MaxTokens  int64   `yaml:"max_tokens,omitempty"`
	// Scope says whose spending the limits cap when the job is
	// partitioned: "worker" (the default: each worker's own) or "job"
	// (the whole job's: worker I of K enforces a Kth of them).
	Scope string `yaml:"scope,omitempty"`
}

// Output configures shards and checkpoints.
type Output struct {
	ShardRows          int           `yaml:"shard_rows"`
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
}

// DefaultJob is a job with every default set and no input, output or endpoint.
func DefaultJob() Job {
	// Every stage gets its own pointer: decoding a job.yaml over the
	// defaults writes through them, and a shared one would give every
	// stage the temperature of the last stage decoded.
	one := 1.0
	zero := func() *float64 { z := 0.0; return &z }
	return Job{
		Input: Input{Format: "auto", Fields: Fields{Problem: "problem", Answer: "answer", ID: "id", Source: "source", Reference: "solution", Text: "text", Title: "title"}, MaxLineBytes: 4 << 20},
		Style: schema.StyleSRaR,
		Rollout: RolloutStage{
			Endpoint:   Endpoint{APIKeyEnv: "OPENAI_API_KEY"},
			Sampling:   Sampling{Temperature: &one},
			N:          8,
			PerRequest: 1,
		},
		Distill:   DistillStage{Sampling: Sampling{Temperature: zero()}, MaxSolutions: 8, MaxSolutionChars: 6000, MaxItems: 12, RepairAttempts: 2},
		Judge:     JudgeStage{Sampling: Sampling{Temperature: zero()}, Enabled: true, Mode: "batch", RepairAttempts: 2},
		Empirical: EmpiricalStage{Sampling: Sampling{Temperature: zero()}, Alpha: 0.2, RepairAttempts: 1},
		Grounded: GroundedStage{PassageChars: 6000, MinPassageChars: DefaultMinPassageChars, QuestionsPerPassage: 1, MinCriteria: 5, MaxCriteria: 10, MinTotalWeight: 5, MaxCopiedWords: 12, Enrich: true,
			JudgePassageTokens: prompts.DefaultJudgePassageTokens, AnalysisChars: 12000},
		JSONObject: JSONObjectStages{Analyze: true, Synthesize: true, Judge: true},
		Selection:  Selection{MinCorrect: 1, MinIncorrect: 1},
		Split:      SplitFractions{Validation: 0.02},
		Limits:     Limits{Concurrency: 64, AttemptTimeout: 10 * time.Minute, MaxAttempts: 6, BackoffMax: time.Minute},
		Output:     Output{ShardRows: 1000, CheckpointInterval: 30 * time.Second},
	}
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
		if e.Kind == "" {
			e.Kind = j.Rollout.Kind
		}
	}
	return e
}

// Normalize fills inherited endpoints and derived defaults. Call it after
// flags are applied and before Validate.
func (j *Job) Normalize() {
	j.Distill.Endpoint = j.stageEndpoint(j.Distill.Endpoint)
	j.Judge.Endpoint = j.stageEndpoint(j.Judge.Endpoint)
	j.Empirical.Endpoint = j.stageEndpoint(j.Empirical.Endpoint)
	j.resolvePanels()
	if j.Judge.Order == "" {
		j.Judge.Order = OrderShuffled
	}
	if j.Judge.Layout == "" {
		j.Judge.Layout = string(prompts.LayoutCache)
	}
	if j.Empirical.MaxResponseTokens == 0 {
		j.Empirical.MaxResponseTokens = prompts.DefaultJudgeMaxResponseTokens
	}
	if j.Rollout.PerRequest <= 0 {
		j.Rollout.PerRequest = 1
	}
	if j.Input.Format == "" {
		j.Input.Format = "auto"
	}
}

// stageModels maps each model the job sends requests to onto the stages
// that use it.
func (j *Job) stageModels() map[string][]string {
	out := map[string][]string{}
	add := func(stage, model string) {
		if model != "" && !slices.Contains(out[model], stage) {
			out[model] = append(out[model], stage)
		}
	}
	add(StageRollout, j.Rollout.Model)
	add(StageDistill, j.Distill.Model)
	if j.Judge.Enabled {
		add(StageJudge, j.Judge.Model)
	}
	if j.Empirical.Enabled {
		add(StageEmpirical, j.Empirical.Model)
	}
	for _, p := range j.Panels() {
		for _, jd := range p.Judges {
			add(p.Field, jd.Model)
		}
	}
	return out
}

// Validate reports every problem with the job at once, naming each field.
// The error is a *UsageError.
func (j *Job) Validate() error {
	var v validation
	j.validateInput(&v)
	j.validateEndpoints(&v)
	j.validateStages(&v)
	j.validatePanels(&v)
	j.validateLimits(&v)
	j.validatePrices(&v)
	j.validateBatch(&v)
	j.validatePartition(&v)
	return v.err()
}

// validation collects the problems of a job, one line each; what is not
// given comes after the mistakes in what is.
type validation struct{ problems, missing []string }

func (v *validation) bad(field, format string, args ...any) {
	v.problems = append(v.problems, field+": "+fmt.Sprintf(format, args...))
}

// notGiven records a setting that is missing.
func (v *validation) notGiven(field, format string, args ...any) {
	v.missing = append(v.missing, field+": "+fmt.Sprintf(format, args...))
}

func (v *validation) err() error {
	all := append(v.problems, v.missing...)
	if len(all) == 0 {
		return nil
	}
	return &UsageError{Problems: all}
}

func (j *Job) validateInput(v *validation) {
	if len(j.Input.Paths) == 0 {
		v.bad("input.paths", "no input file given (use --input or input.paths)")
	}
	switch j.Input.Format {
	case "auto", "jsonl", "parquet":
	default:
		v.bad("input.format", "%q is not one of auto, jsonl, parquet", j.Input.Format)
	}
	switch {
	case j.Style == schema.StyleGrounded && j.Input.Fields.Text == "":
		v.bad("input.fields.text", "the grounded style needs the name of the documents' text field (--field-text)")
	case j.Style != schema.StyleGrounded && (j.Input.Fields.Problem == "" || j.Input.Fields.Answer == ""):
		v.bad("input.fields", "problem and answer field names are required")
	}
	if j.Input.MaxLineBytes <= 0 {
		v.bad("input.max_line_bytes", "must be positive")
	}
	if j.Out == "" {
		v.bad("out", "no run directory given (use --out or out)")
	}
}

func (j *Job) validateEndpoints(v *validation) {
	// A stage without an endpoint or model of its own takes the
	// rollout's: one that is missing is said once, as the rollout's.
	checkEndpoint := func(stage string, e Endpoint) {
		inherited := stage != StageRollout
		if e.BaseURL != "" || !inherited || j.Rollout.BaseURL != "" {
			checkBaseURL(v, stage, e.BaseURL)
		}
		if e.Model == "" && (!inherited || j.Rollout.Model != "") {
			v.notGiven(stage+".model", "no model given (use --model%s)", everyStage(stage))
		}
		if err := llm.CheckEndpointKind(e.Kind); err != nil {
			v.bad(stage+".endpoint_kind", "%v", err)
		}
	}
	checkEndpoint(StageRollout, j.Rollout.Endpoint)
	checkEndpoint(StageDistill, j.Distill.Endpoint)
	if j.Judge.Enabled {
		checkEndpoint(StageJudge, j.Judge.Endpoint)
	}
	if j.Empirical.Enabled {
		checkEndpoint(StageEmpirical, j.Empirical.Endpoint)
	}
	for _, p := range j.Panels() {
		for i, jd := range p.Judges {
			checkBaseURL(v, fmt.Sprintf("%s[%d]", p.Field, i), jd.BaseURL)
		}
	}
}

// everyStage notes, of the rollout stage's endpoint, that every other
// stage takes it unless it names its own.
func everyStage(field string) string {
	if field == StageRollout {
		return "; every stage uses it unless it names its own"
	}
	return ""
}

// checkBaseURL reports a missing or unusable base URL of field's endpoint.
func checkBaseURL(v *validation, field, baseURL string) {
	if baseURL == "" {
		v.notGiven(field+".base_url", "no endpoint given (use --base-url%s)", everyStage(field))
	} else if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.bad(field+".base_url", "%q is not an http(s) URL", baseURL)
	} else if u.User != nil {
		v.bad(field+".base_url", "must not carry credentials; name an environment variable in api_key_env")
	}
}

func (j *Job) validateStages(v *validation) {
	switch j.Style {
	case schema.StyleSRaR, schema.StyleFactualProcess:
	case schema.StyleGrounded:
		j.validateGrounded(v)
	default:
		v.bad("style", "%q is not one of %s, %s, %s", j.Style, schema.StyleSRaR, schema.StyleFactualProcess, schema.StyleGrounded)
	}
	if j.Rollout.N < 1 || j.Rollout.N > 1024 {
		v.bad("rollout.n", "%d is outside 1..1024", j.Rollout.N)
	}
	if j.Rollout.PerRequest > j.Rollout.N {
		v.bad("rollout.per_request", "%d is larger than n=%d", j.Rollout.PerRequest, j.Rollout.N)
	}
	if j.Distill.MaxSolutions < 1 {
		v.bad("distill.max_solutions", "must be at least 1")
	}
	if j.Distill.MaxSolutionChars < 200 {
		v.bad("distill.max_solution_chars", "must be at least 200")
	}
	if j.Distill.MaxItems < 2 || j.Distill.MaxItems > 64 {
		v.bad("distill.max_items", "%d is outside 2..64", j.Distill.MaxItems)
	}
	if j.Judge.Mode != "batch" && j.Judge.Mode != "item" {
		v.bad("judge.mode", "%q is not batch or item", j.Judge.Mode)
	}
	for _, r := range []struct {
		field string
		n     int
	}{{"distill.repair_attempts", j.Distill.RepairAttempts}, {"judge.repair_attempts", j.Judge.RepairAttempts}, {"empirical.repair_attempts", j.Empirical.RepairAttempts}} {
		if r.n < 0 || r.n > 10 {
			v.bad(r.field, "%d is outside 0..10", r.n)
		}
	}
	if _, err := prompts.ParseLayout(j.Judge.Layout); err != nil {
		v.bad("judge.layout", "%q is not %s or %s", j.Judge.Layout, prompts.LayoutCache, prompts.LayoutPaper)
	}
	if j.Judge.Group && j.JudgeLayout() != prompts.LayoutCache {
		v.bad("judge.group", "needs judge.layout: %s (a group request puts the responses last, after the shared rubric); this job's layout is %s", prompts.LayoutCache, j.JudgeLayout())
	}
	if m := j.Empirical.MaxResponseTokens; m != -1 && m != 0 && m < prompts.MinJudgeMaxResponseTokens {
		v.bad("empirical.max_response_tokens", "%d is below %d: the judge would see too little of a response to grade it (-1: no budget)", m, prompts.MinJudgeMaxResponseTokens)
	}
	if j.Empirical.Alpha < -1 || j.Empirical.Alpha >= 1 {
		v.bad("empirical.alpha", "%g is outside [-1, 1)", j.Empirical.Alpha)
	}
	switch {
	case j.Empirical.OpenBook && j.Style != schema.StyleGrounded:
		v.bad("empirical.open_book", "is for the grounded style (a math record's correctness label measures its items); this job's style is %s", j.Style)
	case j.Empirical.OpenBook && !j.Empirical.Enabled:
		v.bad("empirical.open_book", "needs the empirical stage: set empirical.enabled: true (--empirical)")
	}
	if j.Selection.MinCorrect < 0 || j.Selection.MinIncorrect < 0 {
		v.bad("selection", "min_correct and min_incorrect must not be negative")
	}
	if j.Style != schema.StyleGrounded && j.Selection.MinCorrect+j.Selection.MinIncorrect > j.Rollout.N {
		v.bad("selection", "min_correct + min_incorrect = %d needs more than n=%d rollouts", j.Selection.MinCorrect+j.Selection.MinIncorrect, j.Rollout.N)
	}
	if j.Split.Validation < 0 || j.Split.Test < 0 || j.Split.Validation+j.Split.Test > 1 {
		v.bad("split", "validation and test must be non-negative and add up to at most 1")
	}
}

func (j *Job) validateGrounded(v *validation) {
	g := j.Grounded
	if g.PassageChars < 200 || g.PassageChars > 1_000_000 {
		v.bad("grounded.passage_chars", "%d is outside 200..1000000", g.PassageChars)
	}
	if g.MinPassageChars < 0 || g.MinPassageChars > 1_000_000 {
		v.bad("grounded.min_passage_chars", "%d is outside 0..1000000", g.MinPassageChars)
	}
	if g.QuestionsPerPassage < 1 || g.QuestionsPerPassage > 16 {
		v.bad("grounded.questions_per_passage", "%d is outside 1..16", g.QuestionsPerPassage)
	}
	if g.MinCriteria < 1 || g.MaxCriteria > 32 || g.MinCriteria > g.MaxCriteria {
		v.bad("grounded.min_criteria", "min_criteria %d and max_criteria %d must satisfy 1 <= min <= max <= 32", g.MinCriteria, g.MaxCriteria)
	}
	if g.MinTotalWeight < 0 {
		v.bad("grounded.min_total_weight", "must not be negative")
	}
	if g.MaxCopiedWords < 3 {
		v.bad("grounded.max_copied_words", "%d is below 3", g.MaxCopiedWords)
	}
	if g.AnalysisChars < 1000 || g.AnalysisChars > 1_000_000 {
		v.bad("grounded.analysis_chars", "%d is outside 1000..1000000", g.AnalysisChars)
	}
	if g.JudgePassageTokens < prompts.MinJudgePassageTokens {
		v.bad("grounded.judge_passage_tokens", "%d is below %d: the judge would see too little of a passage to grade against", g.JudgePassageTokens, prompts.MinJudgePassageTokens)
	}
}

func (j *Job) validateLimits(v *validation) {
	if j.Limits.Concurrency < 1 || j.Limits.Concurrency > 16384 {
		v.bad("limits.concurrency", "%d is outside 1..16384", j.Limits.Concurrency)
	}
	if j.Limits.ProblemsInFlight < 0 {
		v.bad("limits.problems_in_flight", "must not be negative (0 derives it from the concurrency)")
	}
	if j.Limits.MaxAttempts < 1 {
		v.bad("limits.max_attempts", "must be at least 1")
	}
	if j.Limits.AttemptTimeout <= 0 {
		v.bad("limits.attempt_timeout", "must be positive")
	}
	if j.Limits.BackoffMax <= 0 {
		v.bad("limits.backoff_max", "must be positive")
	}
	j.validateBudget(v)
	if j.Output.ShardRows < 1 {
		v.bad("output.shard_rows", "must be at least 1")
	}
	if j.Output.CheckpointInterval < time.Second {
		v.bad("output.checkpoint_interval", "must be at least 1s")
	}
}

// validatePrices refuses a cost figure that cannot be measured: once the job
// has a cost budget or any price, every model it uses needs a price (0 for
// a model that costs nothing), or the budget and the report's cost would
// silently count that model as free.
func (j *Job) validatePrices(v *validation) {
	for _, model := range slices.Sorted(maps.Keys(j.Prices)) {
		if p := j.Prices[model]; p.Prompt < 0 || p.Completion < 0 || p.BatchRate < 0 {
			v.bad("prices."+model, "prices must not be negative")
		} else if p.CachedPrompt < 0 {
			v.bad("prices."+model+".cached_prompt_per_mtok", "%g: prices must not be negative", p.CachedPrompt)
		}
	}
	if j.Budget.MaxCostUSD == 0 && len(j.Prices) == 0 {
		return
	}
	why := "the job has prices, so its cost is reported"
	if j.Budget.MaxCostUSD > 0 {
		why = fmt.Sprintf("budget.max_cost_usd is %g", j.Budget.MaxCostUSD)
	}
	models := j.stageModels()
	for _, model := range slices.Sorted(maps.Keys(models)) {
		if _, ok := j.Prices[model]; ok {
			continue
		}
		v.bad("prices", "model %q (%s) has no price, but %s; add `prices: {%q: {prompt_per_mtok: USD, completion_per_mtok: USD}}`, or declare it free with `prices: {%q: 0}` or --free-models %s",
			model, strings.Join(models[model], ", "), why, model, model, model)
	}
}

// UsageError is a mistake in what was asked for (the job, its file, the
// input files), as opposed to a failure while running: distill exits 2 on
// it. Each problem is one line that names the field or file.
type UsageError struct {
	File string // the file the problems are in, if any
	// Kind is what File is, as the message names it: "job file" when
	// empty, "panel file" for ReadPanel's.
	Kind     string
	Problems []string
}

func (e *UsageError) Error() string {
	head := "the job is not usable"
	if e.File != "" {
		head = cmp.Or(e.Kind, "job file") + " " + e.File
	}
	return head + ":\n  " + strings.Join(e.Problems, "\n  ")
}

// PrepareJob reads the job file (when file is not empty) over the defaults,
// applies override (the flags), normalizes and validates the result. Every
// problem found, unknown keys and wrong types in the file as well as invalid
// values, is in one *UsageError.
func PrepareJob(file string, override func(*Job)) (Job, error) {
	job := DefaultJob()
	var problems []string
	if file != "" {
		var err error
		job, err = LoadJobFile(file)
		var ue *UsageError
		switch {
		case errors.As(err, &ue):
			problems = append(problems, ue.Problems...)
		case err != nil:
			return job, err
		}
	}
	if override != nil {
		override(&job)
	}
	if job.Style == schema.StyleGrounded && !fileSetsKey(file, "split") {
		job.Split = GroundedSplit
	}
	job.groundedTokenDefaults()
	job.Normalize()
	var ue *UsageError
	if errors.As(job.Validate(), &ue) {
		problems = append(problems, ue.Problems...)
	}
	if len(problems) > 0 {
		return job, &UsageError{File: file, Problems: problems}
	}
	return job, nil
}

// GroundedSplit is the grounded style's default split, 70/15/15 by id
// (seed 001's corpora are evaluated on held-out passages); a job file's
// split: overrides it.
var GroundedSplit = SplitFractions{Validation: 0.15, Test: 0.15}

// fileSetsKey reports whether the YAML job file sets the top-level key.
func fileSetsKey(file, key string) bool {
	if file == "" {
		return false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	var top map[string]yaml.Node
	if yaml.Unmarshal(b, &top) != nil {
		return false
	}
	_, ok := top[key]
	return ok
}

// RunDirYAML is the job as written to RUN/job.yaml: normalized, with
// absolute paths so that the file reads back the same from anywhere.
func (j *Job) RunDirYAML() ([]byte, error) {
	c := *j
	abs := func(p string) string {
		if p == "" {
			return p
		}
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	c.Input.Paths = make([]string, len(j.Input.Paths))
	for i, p := range j.Input.Paths {
		c.Input.Paths[i] = abs(p)
	}
	c.Out, c.PromptsDir, c.Cache = abs(j.Out), abs(j.PromptsDir), abs(j.Cache)
	c.Batch.FilesDir = abs(j.Batch.FilesDir)
	c.Judge.Panel, c.Empirical.Panel = slices.Clone(j.Judge.Panel), slices.Clone(j.Empirical.Panel)
	for _, panel := range [][]PanelJudge{c.Judge.Panel, c.Empirical.Panel} {
		for i := range panel {
			panel[i].PromptsDir = abs(panel[i].PromptsDir)
		}
	}
	return yaml.Marshal(&c)
}

// Endpoints is each stage's endpoint.
func (j *Job) Endpoints() map[string]Endpoint {
	return map[string]Endpoint{StageRollout: j.Rollout.Endpoint, StageDistill: j.Distill.Endpoint, StageJudge: j.Judge.Endpoint, StageEmpirical: j.Empirical.Endpoint}
}
