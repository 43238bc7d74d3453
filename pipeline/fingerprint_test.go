package pipeline

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/verify"
)

// neutralSettings are the job settings that do not change what a record
// holds, with the reason. Changing them never needs --force.
func neutralSettings() map[string]string {
	endpoint := "where requests go and how they are sent, not what is asked"
	m := map[string]string{
		"input.paths":          "new input lines add problems; done ones stay done",
		"input.format":         "how the same rows are read",
		"input.max_line_bytes": "which lines are too long to read, not what a record holds",
		"out":                  "where the run is",
		"limits":               "how fast requests are sent",
		"prices":               "what the run costs",
		"budget":               "when the run stops; a stopped run resumes",
		"output":               "how records are grouped into shards",
		"prompts_dir":          "the templates' content hashes are in the fingerprint instead",
		"cache":                "where answered requests are kept",
		"template_hashes":      "written by the run; the templates' hashes enter the fingerprint as template.*",
		"versions":             "written by the run; the versions enter the fingerprint as versions.*",
		"batch":                "how batches are cut, polled and retried: the same requests, the same answers",
		"json_object":          "how a request is sent (response_format); the reply is parsed and checked the same, and the request's cache key holds it",
	}
	for _, stage := range []string{StageRollout, StageDistill, StageJudge, StageEmpirical} {
		for _, f := range []string{"base_url", "api_key_env", "legacy_max_tokens", "request_mode"} {
			m[stage+"."+f] = endpoint
		}
	}
	return m
}

// jobLeaves lists the job file paths of every setting of the Job struct:
// "rollout.temperature", "limits.concurrency", "prices", ...
func jobLeaves(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			out = append(out, jobLeaves(f.Type, prefix)...)
			continue
		}
		path := join(prefix, name)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			out = append(out, jobLeaves(f.Type, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// coveredBy reports whether path is one of names or lies under one of them.
func coveredBy(path string, names []string) bool {
	for _, n := range names {
		if path == n || strings.HasPrefix(path, n+".") {
			return true
		}
	}
	return false
}

func resultPaths() []string {
	var out []string
	for _, s := range resultSettings() {
		out = append(out, s.path)
	}
	return out
}

// TestEveryJobFieldIsClassified: each setting of a job either enters the
// fingerprint or is listed, with a reason, as not changing results. A new
// field in neither list fails here, so the fingerprint cannot silently miss it.
func TestEveryJobFieldIsClassified(t *testing.T) {
	result, neutral := resultPaths(), slices.Collect(func(yield func(string) bool) {
		for k := range neutralSettings() {
			if !yield(k) {
				return
			}
		}
	})
	leaves := jobLeaves(reflect.TypeFor[Job](), "")
	for _, path := range leaves {
		inResult, inNeutral := coveredBy(path, result), coveredBy(path, neutral)
		switch {
		case !inResult && !inNeutral:
			t.Errorf("job setting %s is neither in the fingerprint (resultSettings) nor in the list of settings that do not change results", path)
		case inResult && inNeutral:
			t.Errorf("job setting %s is both in the fingerprint and listed as not changing results", path)
		}
	}
	for _, p := range append(result, neutral...) {
		if !slices.ContainsFunc(leaves, func(l string) bool { return l == p || strings.HasPrefix(l, p+".") }) {
			t.Errorf("%s is classified but is no job setting", p)
		}
	}
}

// settingValue finds the value of the setting at a job file path.
func settingValue(t *testing.T, j *Job, path string) reflect.Value {
	t.Helper()
	v := reflect.ValueOf(j).Elem()
	for _, part := range strings.Split(path, ".") {
		fields := map[string]reflect.Value{}
		collectFields(v, fields)
		f, ok := fields[part]
		if !ok {
			t.Fatalf("no setting %s", path)
		}
		v = f
	}
	return v
}

// change gives a setting a different value of its kind.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-changed")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 0.01)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			n := reflect.New(v.Type().Elem())
			n.Elem().Set(v.Elem())
			v.Set(n)
			change(t, n.Elem())
		}
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("changed"), reflect.New(v.Type().Elem()).Elem())
		v.Set(m)
	default:
		t.Fatalf("cannot change a %s", v.Kind())
	}
}

// fullJob is a normalized job with every stage on, stamped like a run does.
func fullJob(t *testing.T) Job {
	t.Helper()
	j := testJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
	j.Judge.Enabled, j.Empirical.Enabled = true, true
	j.Normalize()
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	j.stampVersions(ps)
	return j
}

// TestEachResultSettingChangesTheFingerprint: changing any setting of the
// fingerprint list changes the fingerprint, and the account of the change
// names that setting (one list makes both, so they cannot drift apart:
// empirical.repair_attempts was once in one and not the other).
// A style's own settings are changed in a job of that style.
func TestEachResultSettingChangesTheFingerprint(t *testing.T) {
	base := fullJob(t)
	grounded := func(t *testing.T) Job {
		j := fullJob(t)
		j.Style = schema.StyleGrounded
		return j
	}
	for _, s := range resultSettings() {
		job := fullJob
		if s.on != nil && !s.on(&base) {
			job = grounded
		}
		base := job(t)
		j := job(t)
		change(t, settingValue(t, &j, s.path))
		if j.Fingerprint() == base.Fingerprint() {
			t.Errorf("changing %s leaves the fingerprint as it was", s.path)
		}
		changes := ChangedSettings(&base, &j)
		if len(changes) != 1 || !strings.HasPrefix(changes[0], s.path+": ") {
			t.Errorf("changing %s is described as %q", s.path, changes)
		}
	}
	for path := range neutralSettings() {
		for _, leaf := range jobLeaves(reflect.TypeFor[Job](), "") {
			if !coveredBy(leaf, []string{path}) || strings.HasPrefix(leaf, "template_hashes") || strings.HasPrefix(leaf, "versions") {
				continue
			}
			j := fullJob(t)
			change(t, settingValue(t, &j, leaf))
			if j.Fingerprint() != base.Fingerprint() {
				t.Errorf("changing %s, which does not change results, changes the fingerprint", leaf)
			}
		}
	}
}

// TestVersionsEnterTheFingerprint: a new answer-verifier policy, record
// layout or template must not resume into old verdicts.
func TestVersionsEnterTheFingerprint(t *testing.T) {
	base := fullJob(t)
	if base.Versions["verify_policy"] != verify.PolicyVersion {
		t.Fatalf("the job is not stamped with the verifier policy: %v", base.Versions)
	}
	for _, key := range []string{"verify_policy", "spec"} {
		j := fullJob(t)
		j.Versions[key] += "-next"
		if j.Fingerprint() == base.Fingerprint() {
			t.Errorf("a new %s leaves the fingerprint as it was", key)
		}
		if c := ChangedSettings(&base, &j); len(c) != 1 || !strings.HasPrefix(c[0], "versions."+key+": ") {
			t.Errorf("a new %s is described as %q", key, c)
		}
	}
	j := fullJob(t)
	j.TemplateHashes[prompts.JudgeBatch] = "0000000000000000"
	if c := ChangedSettings(&base, &j); len(c) != 1 || !strings.HasPrefix(c[0], "template.judge_batch: ") {
		t.Errorf("a new judge template is described as %q", c)
	}
	off := fullJob(t)
	off.Judge.Enabled = false
	off.Judge.Mode = "item" // a disabled stage's settings change nothing
	off2 := fullJob(t)
	off2.Judge.Enabled = false
	if off.Fingerprint() != off2.Fingerprint() {
		t.Error("a disabled judge's mode changes the fingerprint")
	}
}

// TestEmptyRunDirectoryTakesChangedJob: a start that produced no record (a
// wrong model, a wrong field mapping) does not lock in its settings.
func TestEmptyRunDirectoryTakesChangedJob(t *testing.T) {
	f := newFixture(t, 6, llmtest.Config{})
	job := f.job
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"The model does not exist.","type":"invalid_request_error","code":"model_not_found"}}`, http.StatusNotFound)
	}))
	defer notFound.Close()

	wrongModel := job
	wrongModel.Rollout.BaseURL, wrongModel.Rollout.Model, wrongModel.Prices = notFound.URL+"/v1", "no-such-model", nil
	if _, err := Run(context.Background(), wrongModel, Options{}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a wrong model should stop the run with a 404: %v", err)
	}
	wrongAnswers := job
	wrongAnswers.Input.Fields.Answer = "problem" // every rollout is wrong: all left out by selection
	rep := runJob(t, wrongAnswers, Options{})
	if rep.Problems.Done != 0 || rep.Problems.LeftOut == 0 {
		t.Fatalf("the wrong mapping should leave every problem out: %+v", rep.Problems)
	}

	var logs syncBuffer
	rep, err := Run(context.Background(), job, Options{Logger: slogText(&logs)})
	if err != nil {
		t.Fatalf("a directory with 0 records refused a changed job: %v", err)
	}
	if !strings.Contains(logs.String(), "holds no records yet") || !strings.Contains(logs.String(), "input.fields.answer: problem → answer") {
		t.Errorf("taking the changed job is not said in one line naming the change:\n%s", logs.String())
	}
	if p := rep.Problems; p.Done == 0 || p.Done+p.Failed+p.LeftOut != int64(len(f.rows)) || p.Pending != 0 || len(readCorpus(t, job.Out)) != int(p.Done) {
		t.Errorf("after the changed job took the directory: %+v", p)
	}
	written, err := LoadJobFile(jobPath(job.Out))
	if err != nil || written.Input.Fields.Answer != "answer" {
		t.Errorf("job.yaml does not hold the job that took the directory: %v %q", err, written.Input.Fields.Answer)
	}
}

// TestForceKeepsTheFirstJobYAML: --force mixes two jobs in one directory, and
// job.yaml keeps the settings of the first, not silently the last.
func TestForceKeepsTheFirstJobYAML(t *testing.T) {
	f := newFixture(t, 5, llmtest.Config{})
	job := f.job
	runJob(t, job, Options{})
	first, err := os.ReadFile(jobPath(job.Out))
	if err != nil {
		t.Fatal(err)
	}
	changed := job
	changed.Rollout.N = 6
	changed.Distill.RepairAttempts = 3
	_, err = Run(context.Background(), changed, Options{})
	if !errors.Is(err, ErrJobChanged) {
		t.Fatalf("changed job: %v, want ErrJobChanged", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if !slices.Contains(lines, "  rollout.n: 4 → 6") || !slices.Contains(lines, "  distill.repair_attempts: 2 → 3") {
		t.Errorf("the refusal does not give one line per changed setting:\n%s", err)
	}
	if _, err := Run(context.Background(), changed, Options{Force: true}); err != nil {
		t.Fatalf("--force: %v", err)
	}
	after, _ := os.ReadFile(jobPath(job.Out))
	if string(after) != string(first) {
		t.Error("--force rewrote job.yaml to the last settings")
	}
	var kept Job
	if err := yaml.Unmarshal(after, &kept); err != nil || kept.Rollout.N != 4 {
		t.Errorf("job.yaml lost the first job: n=%d err=%v", kept.Rollout.N, err)
	}
}
