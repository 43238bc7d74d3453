package job

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/cespare/xxhash/v2"
	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/llm"
)

// PanelJudge is one judge of a stage's panel (judge.panel,
// empirical.panel), or of a panel file given to validate rejudge or
// rewardd (ReadPanel). A setting left out takes the stage's own: a judge
// that names only a model asks it at the stage's endpoint with the stage's
// sampling and templates.
type PanelJudge struct {
	// Name is how records, reports and provenance call the judge (default:
	// its model; names must differ within a panel).
	Name     string `yaml:"name,omitempty"`
	Endpoint `yaml:",inline"`
	Sampling `yaml:",inline"`
	// PromptsDir is a directory whose templates replace, for this judge
	// only, those of the job (prompts_dir) or the embedded ones.
	PromptsDir string `yaml:"prompts_dir,omitempty"`
}

// Resolved returns the judge with every setting it leaves out taken from
// the stage's endpoint, sampling and prompts directory, and its name
// defaulted to its model.
func (p PanelJudge) Resolved(e Endpoint, s Sampling, promptsDir string) PanelJudge {
	if p.BaseURL == "" {
		p.BaseURL = e.BaseURL
	}
	if p.Kind == "" && p.BaseURL == e.BaseURL {
		p.Kind = e.Kind
	}
	if p.Model == "" {
		p.Model = e.Model
	}
	if p.APIKeyEnv == "" {
		p.APIKeyEnv = e.APIKeyEnv
	}
	if !p.LegacyMaxTokens {
		p.LegacyMaxTokens = e.LegacyMaxTokens
	}
	if p.Mode == "" {
		p.Mode = e.Mode
	}
	if p.Temperature == nil {
		p.Temperature = s.Temperature
	}
	if p.TopP == nil {
		p.TopP = s.TopP
	}
	if p.MaxTokens == 0 {
		p.MaxTokens = s.MaxTokens
	}
	if p.PromptsDir == "" {
		p.PromptsDir = promptsDir
	}
	if p.Name == "" {
		p.Name = p.Model
	}
	return p
}

// CheckPanel returns the problems of a resolved panel, each naming the
// setting by path: field is the panel's ("judge.panel" in a job file,
// "judge.panel[1].model"), or "" for a panel file, whose judges are the
// file itself ("[1].model"). modelFrom is where a judge that names no
// model takes one ("judge.model", "--judge-model"). The problems: fewer than
// two judges, a judge without a model, a judge's endpoint_kind that is no
// kind's name, two judges of one name.
func CheckPanel(field, modelFrom string, judges []PanelJudge) []string {
	if len(judges) == 0 {
		return nil
	}
	var problems []string
	if len(judges) < 2 {
		problems = append(problems, atPath(field, fmt.Sprintf("a panel needs at least two judges (to ask one judge, leave the panel out and set its model in %s)", modelFrom)))
	}
	seen := map[string]int{}
	for i, j := range judges {
		at := fmt.Sprintf("%s[%d]", field, i)
		if j.Model == "" {
			problems = append(problems, fmt.Sprintf("%s: no model (set model here or in %s)", at, modelFrom))
		}
		if err := llm.CheckEndpointKind(j.Kind); err != nil {
			problems = append(problems, fmt.Sprintf("%s.endpoint_kind: %v", at, err))
		}
		if prev, dup := seen[j.Name]; dup {
			problems = append(problems, fmt.Sprintf("%s: name %q is also %s[%d]'s; give each judge its own name", at, j.Name, field, prev))
		}
		seen[j.Name] = i
	}
	return problems
}

// atPath is problem said of the setting at path, or of the whole file
// when path is "".
func atPath(path, problem string) string {
	if path == "" {
		return problem
	}
	return path + ": " + problem
}

// PanelFile is what a panel file is called in messages (UsageError.Kind).
const PanelFile = "panel file"

// ReadPanel reads a panel file: a YAML list of judges in the shape of a job
// file's judge.panel, e.g.
//
//   - name: small
//     model: Qwen/Qwen3-8B
//   - name: large
//     model: gpt-4.1-mini
//     base_url: https://api.openai.com/v1
//     api_key_env: OPENAI_API_KEY
//
// Unknown settings and values of the wrong kind are reported with their
// path in the file ("[1].base_url") and line, in one *UsageError of Kind
// PanelFile ("panel file judges.yaml: ..."). Relative prompts_dir paths are
// relative to the file's directory. The judges are returned as written
// (see Resolved).
func ReadPanel(path string) ([]PanelJudge, error) {
	bad := func(problems ...string) error { return &UsageError{File: path, Kind: PanelFile, Problems: problems} }
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, bad(fmt.Sprintf("cannot read it: %v", err))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, bad(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, bad("the file is empty; it should list the panel's judges")
	}
	if top := doc.Content[0]; top.Kind != yaml.SequenceNode {
		return nil, bad(fmt.Sprintf("line %d: expected a list of judges (- model: ...), found %s", top.Line, describeNode(top)))
	}
	var judges []PanelJudge
	d := &nodeDecoder{}
	d.decode("", doc.Content[0], reflect.ValueOf(&judges).Elem())
	if len(d.problems) > 0 {
		return nil, bad(d.problems...)
	}
	for i := range judges {
		if p := judges[i].PromptsDir; p != "" && !filepath.IsAbs(p) {
			judges[i].PromptsDir = filepath.Join(filepath.Dir(path), p)
		}
	}
	return judges, nil
}

// The judges' item orders (judge.order).
const (
	// OrderShuffled shows a judge the items of a request in an order drawn
	// per judge and per record from judge.order_seed (OrderPermutation).
	OrderShuffled = "shuffled"
	// OrderRubric shows them in rubric order, as runs did before judge
	// orders existed; such jobs keep their fingerprint.
	OrderRubric = "rubric"
)

// StagePanel is the panel of one stage that the job runs: the stage
// (StageJudge or StageEmpirical), its field in the job file and its judges,
// resolved against the stage (see Normalize).
type StagePanel struct {
	Stage, Field string
	Judges       []PanelJudge
}

// Panels are the panels of the stages the job runs, judge stage first.
func (j *Job) Panels() []StagePanel {
	var out []StagePanel
	if j.Judge.Enabled && len(j.Judge.Panel) > 0 {
		out = append(out, StagePanel{StageJudge, "judge.panel", j.Judge.Panel})
	}
	if j.Empirical.Enabled && len(j.Empirical.Panel) > 0 {
		out = append(out, StagePanel{StageEmpirical, "empirical.panel", j.Empirical.Panel})
	}
	return out
}

// resolvePanels fills every setting a panel's judge leaves out from its
// stage (PanelJudge.Resolved), once the stages' endpoints are filled.
func (j *Job) resolvePanels() {
	for i, p := range j.Judge.Panel {
		j.Judge.Panel[i] = p.Resolved(j.Judge.Endpoint, j.Judge.Sampling, j.PromptsDir)
	}
	for i, p := range j.Empirical.Panel {
		j.Empirical.Panel[i] = p.Resolved(j.Empirical.Endpoint, j.Empirical.Sampling, j.PromptsDir)
	}
}

// validatePanels reports the problems of the panels (CheckPanel), a panel
// on a stage the job does not run, and an unknown judge.order.
func (j *Job) validatePanels(v *validation) {
	for _, p := range []struct {
		field  string
		on     bool
		judges []PanelJudge
	}{{"judge.panel", j.Judge.Enabled, j.Judge.Panel}, {"empirical.panel", j.Empirical.Enabled, j.Empirical.Panel}} {
		stage, _, _ := strings.Cut(p.field, ".")
		if len(p.judges) > 0 && !p.on {
			v.bad(p.field, "lists judges, but the %s stage is off: set %s.enabled: true or remove the panel", stage, stage)
			continue
		}
		v.problems = append(v.problems, CheckPanel(p.field, stage+".model", p.judges)...)
	}
	switch j.Judge.Order {
	case OrderShuffled, OrderRubric, "":
	default:
		v.bad("judge.order", "%q is not %s or %s", j.Judge.Order, OrderShuffled, OrderRubric)
	}
}

// judgesOrdered: a stage that shows a judge several items at once runs.
func judgesOrdered(j *Job) bool { return JudgeOn(j) || EmpiricalOn(j) }

// orderSetting is judge.order as it counts in the fingerprint: a job
// written before orders existed (no judge.order in its job.yaml) showed
// its items in rubric order.
func orderSetting(j *Job) string {
	if j.Judge.Order == "" {
		return OrderRubric
	}
	return j.Judge.Order
}

// Shuffled reports whether the job's judges see their items in shuffled
// order (judge.order: shuffled).
func (j *Job) Shuffled() bool { return orderSetting(j) == OrderShuffled }

// OrderPermutation is the order in which judge judge of stage sees the n
// items of one request about record id (part tells apart the record's
// requests: the question of a grounded record, the rollout or answer
// judged): perm[k] is the index, in rubric order, of the item shown k-th.
// It is math/rand/v2's PCG seeded with xxhash64 of
// "ORDER_SEED\x00ID\x00STAGE\x00JUDGE\x00PART" and 0, and its Perm(n): the
// same for every run of the job, different per judge and per record.
func OrderPermutation(seed int64, id, stage, judge string, part, n int) []int {
	h := xxhash.Sum64String(fmt.Sprintf("%d\x00%s\x00%s\x00%s\x00%d", seed, id, stage, judge, part))
	return rand.New(rand.NewPCG(h, 0)).Perm(n)
}

// PanelTemplateKey is the template_hashes key of the template a panel's
// judge sends when its prompts_dir is its own: a changed template of one
// judge is then named as the change on resume.
func PanelTemplateKey(field, judge, template string) string {
	return PanelJudgeRef(field, judge) + "." + template
}

// PanelJudgeRef names a panel's judge in messages and keys:
// "judge.panel[NAME]".
func PanelJudgeRef(field, judge string) string { return field + "[" + judge + "]" }
