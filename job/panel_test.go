package job

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPanel(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "panel.yaml")
	os.WriteFile(good, []byte("- name: small\n  model: m-small\n  temperature: 0\n- model: m-large\n  base_url: http://127.0.0.1:9/v1\n  prompts_dir: tmpl\n"), 0o644)
	judges, err := ReadPanel(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(judges) != 2 || judges[0].Name != "small" || judges[0].Temperature == nil || judges[1].PromptsDir != filepath.Join(dir, "tmpl") {
		t.Fatalf("read %+v", judges)
	}
	stage := Endpoint{BaseURL: "http://stage/v1", Model: "stage-model", APIKeyEnv: "KEY"}
	temp := 0.7
	r0 := judges[0].Resolved(stage, Sampling{Temperature: &temp, MaxTokens: 100}, "")
	r1 := judges[1].Resolved(stage, Sampling{Temperature: &temp}, "job-prompts")
	if r0.BaseURL != "http://stage/v1" || *r0.Temperature != 0 || r0.MaxTokens != 100 || r0.APIKeyEnv != "KEY" {
		t.Errorf("judge 0 resolved to %+v", r0)
	}
	if r1.Name != "m-large" || r1.BaseURL != "http://127.0.0.1:9/v1" || *r1.Temperature != 0.7 || r1.PromptsDir != filepath.Join(dir, "tmpl") {
		t.Errorf("judge 1 resolved to %+v", r1)
	}
	if p := CheckPanel("judge.panel", []PanelJudge{r0, r1}); len(p) != 0 {
		t.Errorf("a good panel has problems %q", p)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("- name: a\n  modle: x\n- name: b\n  temperature: warm\n"), 0o644)
	_, err = ReadPanel(bad)
	var ue *UsageError
	if !errors.As(err, &ue) || len(ue.Problems) != 2 || !strings.Contains(ue.Problems[0], "panel[0].modle (line 2)") || !strings.Contains(ue.Problems[1], "panel[1].temperature (line 4)") {
		t.Errorf("bad panel file: %v", err)
	}
	problems := CheckPanel("judge.panel", []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m"}}, {Name: "a"}})
	if len(problems) != 2 || !strings.Contains(problems[0], "judge.panel[1]: no model") || !strings.Contains(problems[1], `name "a" is also judge.panel[0]'s`) {
		t.Errorf("problems %q", problems)
	}
	if p := CheckPanel("judge.panel", []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m"}}}); len(p) != 1 || !strings.Contains(p[0], "at least two") {
		t.Errorf("a panel of one: %q", p)
	}
}

// TestEndpointKindSetting: a stage without its own endpoint takes the
// rollout's kind with its base URL, a stage on another server keeps the
// default of its own URL, a panel judge on the stage's server takes the
// stage's kind, and a kind that is not a lower-case name is refused naming
// the field.
func TestEndpointKindSetting(t *testing.T) {
	j := testJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
	j.Judge.Enabled, j.Empirical.Enabled = true, true
	j.Rollout.Kind = "vllm"
	j.Empirical.BaseURL = "https://api.openai.com/v1"
	j.Normalize()
	if got := j.Judge.EndpointKind(); got != "vllm" {
		t.Errorf("judge on the rollout server: kind %q, want vllm", got)
	}
	if got := j.Empirical.EndpointKind(); got != "openai" {
		t.Errorf("empirical on api.openai.com: kind %q, want openai", got)
	}
	p := PanelJudge{Endpoint: Endpoint{Model: "m"}}.Resolved(j.Judge.Endpoint, j.Judge.Sampling, "")
	if got := p.EndpointKind(); got != "vllm" {
		t.Errorf("panel judge on the stage's server: kind %q, want vllm", got)
	}
	other := PanelJudge{Endpoint: Endpoint{Model: "m", BaseURL: "http://127.0.0.2:8000/v1"}}.Resolved(j.Judge.Endpoint, j.Judge.Sampling, "")
	if got := other.EndpointKind(); got != "openai-compatible" {
		t.Errorf("panel judge on another server: kind %q, want openai-compatible", got)
	}
	if err := j.Validate(); err != nil {
		t.Fatalf("valid job refused: %v", err)
	}
	j.Distill.Kind = "vLLM"
	err := j.Validate()
	if err == nil || !strings.Contains(err.Error(), "distill.endpoint_kind") {
		t.Errorf("kind vLLM: error %v, want it to name distill.endpoint_kind", err)
	}
}
