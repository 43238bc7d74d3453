package job

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
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
		for _, f := range []string{"base_url", "api_key_env", "legacy_max_tokens", "request_mode", "endpoint_kind"} {
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

// TestWholeInputFingerprintIsUnchanged: a job without a partition keeps the
// fingerprint it had before partitions existed, so run directories made
// before resume without --force.
func TestWholeInputFingerprintIsUnchanged(t *testing.T) {
	j := fullJob(t)
	var b strings.Builder
	for _, l := range j.identityLines() {
		if l.key != "partition" && !judgeKeySetting(l.key) {
			fmt.Fprintf(&b, "%s=%s\n", l.key, l.value)
		}
	}
	old := fullJob(t)
	old.Partition = ""
	before := fmt.Sprintf("%016x", xxhash.Sum64String(b.String()))
	if got := old.Fingerprint(); got != before {
		t.Errorf("a whole-input job's fingerprint is %s, before partitions %s", got, before)
	}
	j.Partition = "0/1"
	if j.Fingerprint() == old.Fingerprint() {
		t.Error("partition 0/1 has the whole-input fingerprint")
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
	j.StampVersions(ps, "")
	return j
}

// TestClosedBookGroundedFingerprintIsUnchanged: a grounded job with the
// empirical stage but without empirical.open_book keeps the fingerprint
// and job-history settings it had before the option existed, so its run
// directories resume; turning the option on changes the fingerprint, names
// the change and stamps the open-book template.
func TestClosedBookGroundedFingerprintIsUnchanged(t *testing.T) {
	j := fullJob(t)
	j.Style = schema.StyleGrounded
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	j.StampVersions(ps, "")
	var b strings.Builder
	for _, l := range j.identityLines() {
		if l.key != "partition" && l.key != "empirical.open_book" && !judgeKeySetting(l.key) {
			fmt.Fprintf(&b, "%s=%s\n", l.key, l.value)
		}
	}
	if got, before := j.Fingerprint(), fmt.Sprintf("%016x", xxhash.Sum64String(b.String())); got != before {
		t.Errorf("a closed-book grounded job's fingerprint is %s, before empirical.open_book %s", got, before)
	}
	if _, ok := j.Settings()["empirical.open_book"]; ok {
		t.Error("the job history of a closed-book grounded job names empirical.open_book")
	}
	open := j
	open.Empirical.OpenBook = true
	open.StampVersions(ps, "")
	if open.Fingerprint() == j.Fingerprint() {
		t.Error("empirical.open_book: true leaves the fingerprint as it was")
	}
	if got := ChangedSettings(&j, &open); !slices.Contains(got, "empirical.open_book: false → true") {
		t.Errorf("the change is described as %q", got)
	}
	if open.TemplateHashes[prompts.GroundedAnswerOpen] == "" || j.TemplateHashes[prompts.GroundedAnswerOpen] != "" {
		t.Errorf("the open-book template is stamped %q with the option, %q without", open.TemplateHashes[prompts.GroundedAnswerOpen], j.TemplateHashes[prompts.GroundedAnswerOpen])
	}
}

// TestOpenBookNeedsGroundedEmpirical: empirical.open_book is refused, with
// the field named and what to do, where it would silently do nothing (a
// math style, or the empirical stage off), and accepted where it samples.
func TestOpenBookNeedsGroundedEmpirical(t *testing.T) {
	for _, tt := range []struct {
		name      string
		style     string
		empirical bool
		want      string // "" = valid
	}{
		{"grounded with the empirical stage", schema.StyleGrounded, true, ""},
		{"grounded without it", schema.StyleGrounded, false, "empirical.open_book: needs the empirical stage: set empirical.enabled: true (--empirical)"},
		{"srar", schema.StyleSRaR, true, "empirical.open_book: is for the grounded style"},
		{"factual_process", schema.StyleFactualProcess, true, "empirical.open_book: is for the grounded style"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := testJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
			j.Style, j.Empirical.Enabled, j.Empirical.OpenBook = tt.style, tt.empirical, true
			j.Normalize()
			err := j.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// TestNoPanelKeepsTheFingerprint: a job without panels keeps the
// fingerprint it had before panels existed; a panel changes it and is
// named as the change.
func TestNoPanelKeepsTheFingerprint(t *testing.T) {
	j := fullJob(t)
	var b strings.Builder
	for _, l := range j.identityLines() {
		if l.key != "partition" && !judgeKeySetting(l.key) {
			fmt.Fprintf(&b, "%s=%s\n", l.key, l.value)
		}
	}
	if got, before := j.Fingerprint(), fmt.Sprintf("%016x", xxhash.Sum64String(b.String())); got != before {
		t.Errorf("a job without a panel has fingerprint %s, before panels %s", got, before)
	}
	withPanel := j
	withPanel.Judge.Panel = []PanelJudge{{Name: "a", Endpoint: Endpoint{Model: "m1"}}, {Name: "b", Endpoint: Endpoint{Model: "m2"}}}
	if withPanel.Fingerprint() == j.Fingerprint() {
		t.Error("a judge panel does not change the fingerprint")
	}
	if got := ChangedSettings(&j, &withPanel); len(got) != 1 || !strings.HasPrefix(got[0], "judge.panel: ") {
		t.Errorf("changed settings %q, want judge.panel", got)
	}
}

// judgeKeySetting: the settings added to the judging stages after these
// fingerprints (issue #31's panels and pinned seeds, issue #42's group
// judging), which a job that leaves them at their defaults must not have
// in its fingerprint.
func judgeKeySetting(key string) bool {
	stage, name, _ := strings.Cut(key, ".")
	return (stage == StageJudge || stage == StageEmpirical) && (name == "panel" || name == "seed" || name == "no_seed" || name == "group")
}

// TestDefaultJudgeSeedKeepsTheFingerprint: a job whose judges take the
// default seed keeps the fingerprint it had before seeds were pinned; a
// seed set away from it, or no seed, changes it and is named as the
// change.
func TestDefaultJudgeSeedKeepsTheFingerprint(t *testing.T) {
	j := fullJob(t)
	if _, ok := j.Settings()["judge.seed"]; ok {
		t.Error("the job history of a job with the default seed names judge.seed")
	}
	changes := map[string]func(*Job){
		"judge.seed":        func(j *Job) { j.Judge.Seed = 7 },
		"judge.no_seed":     func(j *Job) { j.Judge.NoSeed = true },
		"empirical.seed":    func(j *Job) { j.Empirical.Seed = -3 },
		"empirical.no_seed": func(j *Job) { j.Empirical.NoSeed = true },
	}
	for name, change := range changes {
		c := fullJob(t)
		change(&c)
		if c.Fingerprint() == j.Fingerprint() {
			t.Errorf("%s: the fingerprint did not change", name)
		}
		if got := ChangedSettings(&j, &c); !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, name) }) {
			t.Errorf("%s: the changes named are %q", name, got)
		}
	}
}

func TestJudgeSeedSent(t *testing.T) {
	if got := (JudgeSeed{Seed: 5}).Sent(); got == nil || *got != 5 {
		t.Errorf("seed 5 sends %v", got)
	}
	if got := (JudgeSeed{}).Sent(); got == nil || *got != 0 {
		t.Errorf("the default seed sends %v, want 0", got)
	}
	if got := (JudgeSeed{Seed: 5, NoSeed: true}).Sent(); got != nil {
		t.Errorf("no_seed sends %d", *got)
	}
}
