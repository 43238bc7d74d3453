package job

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"gopkg.in/yaml.v3"
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
	if p := CheckPanel("judge.panel", "the stage", []PanelJudge{r0, r1}); len(p) != 0 {
		t.Errorf("a good panel has problems %q", p)
	}

	problems := CheckPanel("judge.panel", "judge.model", []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m"}}, {Name: "a"}})
	if len(problems) != 2 || !strings.Contains(problems[0], "judge.panel[1]: no model (set model here or in judge.model)") || !strings.Contains(problems[1], `name "a" is also judge.panel[0]'s`) {
		t.Errorf("problems %q", problems)
	}
}

// TestPanelFileProblems: a panel file's problems name it as a panel file
// (not a job file) and each setting by its path in the file, the judges
// being the file's top-level list; CheckPanel says the same of a panel
// file's judges, with the hint of the command that reads it, and of a job
// file's panel under its field.
func TestPanelFileProblems(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unknown setting and wrong kind", "- name: a\n  modle: x\n- name: b\n  temperature: warm\n",
			[]string{`[0].modle (line 2): unknown setting; did you mean "model"?`, `[1].temperature (line 4): "warm" is not a number`}},
		{"not a list", "model: x\n", []string{"line 1: expected a list of judges (- model: ...), found a mapping"}},
		{"empty", "", []string{"the file is empty; it should list the panel's judges"}},
		{"bad YAML", "- model: [x\n", []string{"line 1: did not find expected ',' or ']'"}},
	} {
		file := filepath.Join(dir, "judges.yaml")
		os.WriteFile(file, []byte(tc.body), 0o644)
		_, err := ReadPanel(file)
		var ue *UsageError
		if !errors.As(err, &ue) || !slices.Equal(ue.Problems, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, problemsOf(err), tc.want)
			continue
		}
		if head := "panel file " + file + ":\n  "; !strings.HasPrefix(err.Error(), head) {
			t.Errorf("%s: %q does not start with %q", tc.name, err.Error(), head)
		}
	}
	for _, tc := range []struct {
		name, field, modelFrom string
		judges                 []PanelJudge
		want                   []string
	}{
		{"panel file of one judge", "", "--judge-model", []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m"}}},
			[]string{"a panel needs at least two judges (to ask one judge, leave the panel out and set its model in --judge-model)"}},
		{"job file's panel of one judge", "empirical.panel", "empirical.model", []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m"}}},
			[]string{"empirical.panel: a panel needs at least two judges (to ask one judge, leave the panel out and set its model in empirical.model)"}},
		{"panel file judge without a model", "", "--model", []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m"}}, {Name: "b"}},
			[]string{"[1]: no model (set model here or in --model)"}},
		{"panel file judges of one name", "", "--model", []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m"}}, {Name: "a", Endpoint: Endpoint{Model: "n", Kind: "vLLM"}}},
			[]string{`[1].endpoint_kind: endpoint kind "vLLM": want a lower-case name such as openai, vllm or sglang`, `[1]: name "a" is also [0]'s; give each judge its own name`}},
	} {
		if got := CheckPanel(tc.field, tc.modelFrom, tc.judges); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// problemsOf is a UsageError's problems, or the error as one.
func problemsOf(err error) []string {
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue.Problems
	}
	return []string{fmt.Sprint(err)}
}

// TestPanelsInAJobFile: a job file's panels are resolved against their
// stage at load time (endpoint, sampling, prompts directory relative to the
// file), the normalized RUN/job.yaml keeps them and reads back the same
// job, and every problem names its field.
func TestPanelsInAJobFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "job.yaml")
	os.WriteFile(file, []byte(`input: {paths: [in.jsonl]}
out: run
rollout: {base_url: "http://127.0.0.1:9/v1", model: m}
empirical: {enabled: true}
judge:
  temperature: 0.3
  panel:
    - name: small
      model: j-small
      prompts_dir: small-prompts
    - model: j-large
      base_url: "http://127.0.0.1:10/v1"
prices: {m: 0, j-small: 0, j-large: 0}
`), 0o644)
	jb, err := PrepareJob(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := jb.Judge.Panel
	if len(p) != 2 || p[0].BaseURL != "http://127.0.0.1:9/v1" || *p[0].Temperature != 0.3 || p[0].PromptsDir != filepath.Join(dir, "small-prompts") ||
		p[1].Name != "j-large" || p[1].BaseURL != "http://127.0.0.1:10/v1" {
		t.Fatalf("resolved panel %+v", p)
	}
	if jb.Judge.Order != OrderShuffled {
		t.Errorf("judge.order %q by default, want shuffled", jb.Judge.Order)
	}
	b, err := jb.RunDirYAML()
	if err != nil {
		t.Fatal(err)
	}
	back := DefaultJob()
	if err := yaml.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.Normalize()
	if back.Fingerprint() != jb.Fingerprint() || len(ChangedSettings(&back, &jb)) != 0 {
		t.Errorf("RUN/job.yaml reads back as another job: %q\n%s", ChangedSettings(&back, &jb), b)
	}

	moved := jb // the same job file read from another directory
	moved.Judge.Panel = slices.Clone(jb.Judge.Panel)
	moved.Judge.Panel[0].PromptsDir = filepath.Join("..", "elsewhere", "small-prompts")
	if moved.Fingerprint() != jb.Fingerprint() {
		t.Error("a judge's prompts_dir path enters the fingerprint; its templates' hashes should, not where it is")
	}

	for _, tc := range []struct {
		name string
		edit func(j *Job)
		want string
	}{
		{"one judge", func(j *Job) { j.Judge.Panel = j.Judge.Panel[:1] }, "judge.panel: a panel needs at least two judges (to ask one judge, leave the panel out and set its model in judge.model)"},
		{"stage off", func(j *Job) { j.Judge.Enabled = false }, "judge.panel: lists judges, but the judge stage is off"},
		{"bad url", func(j *Job) { j.Judge.Panel[1].BaseURL = "ftp://x" }, `judge.panel[1].base_url: "ftp://x" is not an http(s) URL`},
		{"no price", func(j *Job) { delete(j.Prices, "j-large") }, `model "j-large" (judge.panel) has no price`},
		{"same name", func(j *Job) {
			j.Empirical.Panel = []PanelJudge{{Name: "x", Endpoint: Endpoint{Model: "j-small"}}, {Name: "x", Endpoint: Endpoint{Model: "j-large"}}}
		}, `empirical.panel[1]: name "x" is also empirical.panel[0]'s`},
		{"order", func(j *Job) { j.Judge.Order = "random" }, `judge.order: "random" is not shuffled or rubric`},
	} {
		j := jb
		j.Judge.Panel = slices.Clone(jb.Judge.Panel)
		j.Prices = maps.Clone(jb.Prices)
		tc.edit(&j)
		j.Normalize()
		var ue *UsageError
		if err := j.Validate(); !errors.As(err, &ue) || !slices.ContainsFunc(ue.Problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("%s: %v, want a problem saying %q", tc.name, err, tc.want)
		}
	}
}

// TestRubricOrderKeepsTheFingerprint: a job in rubric order has the
// fingerprint it had before judge orders existed, so its run directories
// resume; the default (shuffled) is a change that names judge.order, as it
// does against the job.yaml of an older run (which has no judge.order).
func TestRubricOrderKeepsTheFingerprint(t *testing.T) {
	j := testJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
	j.Judge.Order = OrderRubric
	j.Normalize()
	var b strings.Builder
	for _, l := range j.identityLines() {
		unstated := l.unstated != "" && l.value == l.unstated // settings newer than judge orders at their old value
		if !strings.HasPrefix(l.key, "judge.order") && l.key != "partition" && !strings.HasSuffix(l.key, ".panel") && !unstated {
			fmt.Fprintf(&b, "%s=%s\n", l.key, l.value)
		}
	}
	if got, before := j.Fingerprint(), fmt.Sprintf("%016x", xxhash.Sum64String(b.String())); got != before {
		t.Errorf("a rubric-order job has fingerprint %s, before judge orders %s", got, before)
	}
	older := DefaultJob() // an older run's job.yaml, read as changesFrom reads it
	if err := yaml.Unmarshal([]byte("judge: {enabled: true}\n"), &older); err != nil {
		t.Fatal(err)
	}
	cur := testJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
	cur.Normalize()
	older.Rollout, older.Distill, older.Judge.Endpoint, older.Empirical.Endpoint, older.Prices = cur.Rollout, cur.Distill, cur.Judge.Endpoint, cur.Empirical.Endpoint, cur.Prices
	older.Input, older.Out, older.Limits, older.Output = cur.Input, cur.Out, cur.Limits, cur.Output
	changes := ChangedSettings(&older, &cur)
	if len(changes) != 2 || changes[0] != "judge.order: rubric → shuffled" || changes[1] != "judge.layout: paper → cache" {
		t.Errorf("an older run resumed with the default order and layout: changes %q", changes)
	}
	seeded := cur
	seeded.Judge.OrderSeed = 9
	if seeded.Fingerprint() == cur.Fingerprint() {
		t.Error("judge.order_seed does not change the fingerprint")
	}
}

// TestOrderPermutation: the order is a permutation, the same for the same
// judge and record, and another for another judge, record or seed.
func TestOrderPermutation(t *testing.T) {
	base := OrderPermutation(1, "rec", StageJudge, "a", 0, 8)
	sorted := slices.Sorted(slices.Values(base))
	for i, v := range sorted {
		if v != i {
			t.Fatalf("not a permutation of 0..7: %v", base)
		}
	}
	if !slices.Equal(base, OrderPermutation(1, "rec", StageJudge, "a", 0, 8)) {
		t.Error("the same judge and record get another order")
	}
	for _, other := range [][]int{
		OrderPermutation(2, "rec", StageJudge, "a", 0, 8), OrderPermutation(1, "rec2", StageJudge, "a", 0, 8),
		OrderPermutation(1, "rec", StageJudge, "b", 0, 8), OrderPermutation(1, "rec", StageEmpirical, "a", 0, 8),
		OrderPermutation(1, "rec", StageJudge, "a", 1, 8),
	} {
		if slices.Equal(base, other) {
			t.Errorf("order %v repeats for another seed, record, judge, stage or part", other)
		}
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

// FuzzReadPanel: no panel file makes ReadPanel panic, and every refusal is
// a usage error that calls the file a panel file and says what is wrong.
func FuzzReadPanel(f *testing.F) {
	for _, seed := range []string{
		"- model: a\n- model: b\n", "- model: a\n  modle: b\n", "model: a\n", "a\n", "- 1\n- [2]\n", "- {temperature: warm}\n",
		"- &x {model: a}\n- *x\n", "- prompts_dir: p\n  top_p: ~\n", ":\n", "",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "judges.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadPanel(path)
		var ue *UsageError
		if err != nil && (!errors.As(err, &ue) || len(ue.Problems) == 0 || !strings.HasPrefix(err.Error(), "panel file "+path+":\n  ")) {
			t.Fatalf("not a panel file's usage error with problems: %v", err)
		}
	})
}
