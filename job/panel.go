package job

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

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
// setting by path (field is e.g. "judge.panel"): fewer than two judges, a
// judge without a model, a judge's endpoint_kind that is no kind's name,
// or two judges of one name.
func CheckPanel(field string, judges []PanelJudge) []string {
	if len(judges) == 0 {
		return nil
	}
	var problems []string
	if len(judges) < 2 {
		problems = append(problems, fmt.Sprintf("%s: a panel needs at least two judges (one judge is the stage's own model)", field))
	}
	seen := map[string]int{}
	for i, j := range judges {
		at := fmt.Sprintf("%s[%d]", field, i)
		if j.Model == "" {
			problems = append(problems, at+": no model (set model here or in the stage)")
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
// line, in one *UsageError. Relative prompts_dir paths are relative to the
// file's directory. The judges are returned as written (see Resolved).
func ReadPanel(path string) ([]PanelJudge, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &UsageError{File: path, Problems: []string{fmt.Sprintf("cannot read it: %v", err)}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, &UsageError{File: path, Problems: []string{strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if len(doc.Content) == 0 {
		return nil, &UsageError{File: path, Problems: []string{"the file is empty; it should list the panel's judges"}}
	}
	var judges []PanelJudge
	d := &nodeDecoder{}
	d.decode("panel", doc.Content[0], reflect.ValueOf(&judges).Elem())
	if len(d.problems) > 0 {
		return nil, &UsageError{File: path, Problems: d.problems}
	}
	for i := range judges {
		if p := judges[i].PromptsDir; p != "" && !filepath.IsAbs(p) {
			judges[i].PromptsDir = filepath.Join(filepath.Dir(path), p)
		}
	}
	return judges, nil
}
