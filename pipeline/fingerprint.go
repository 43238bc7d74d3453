package pipeline

import (
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
	"github.com/rubricforge/rubricforge/verify"
)

// The job fingerprint identifies what a run produces. It is made from one
// list, identityLines, from which the readable account of a change is made
// too, so the two cannot drift apart. A setting that changes what a record
// holds belongs in resultSettings; one that does not belongs in the test's
// list of neutral settings, with the reason (the test fails when a Job field
// is in neither).

// setting is one job setting that changes what a run produces.
type setting struct {
	path  string // as written in the job file
	value func(j *Job) string
}

// resultSettings are the job settings that change what a record holds. A
// disabled stage's settings read "off", so changing them changes nothing.
func resultSettings() []setting {
	s := []setting{
		{"style", func(j *Job) string { return j.Style }},
		{"input.source", func(j *Job) string { return j.Input.Source }},
		{"input.fields.problem", func(j *Job) string { return j.Input.Fields.Problem }},
		{"input.fields.answer", func(j *Job) string { return j.Input.Fields.Answer }},
		{"input.fields.id", func(j *Job) string { return j.Input.Fields.ID }},
		{"input.fields.source", func(j *Job) string { return j.Input.Fields.Source }},
		{"input.fields.reference", func(j *Job) string { return j.Input.Fields.Reference }},
		{"rollout.n", func(j *Job) string { return fmt.Sprint(j.Rollout.N) }},
		{"rollout.per_request", func(j *Job) string { return fmt.Sprint(j.Rollout.PerRequest) }},
		{"rollout.seed", func(j *Job) string { return fmt.Sprint(j.Rollout.Seed) }},
		{"distill.max_solutions", func(j *Job) string { return fmt.Sprint(j.Distill.MaxSolutions) }},
		{"distill.max_solution_chars", func(j *Job) string { return fmt.Sprint(j.Distill.MaxSolutionChars) }},
		{"distill.max_items", func(j *Job) string { return fmt.Sprint(j.Distill.MaxItems) }},
		{"distill.repair_attempts", func(j *Job) string { return fmt.Sprint(j.Distill.RepairAttempts) }},
		{"judge.enabled", func(j *Job) string { return fmt.Sprint(j.Judge.Enabled) }},
		{"judge.mode", ifOn(judgeOn, func(j *Job) string { return j.Judge.Mode })},
		{"judge.drop_invalid", ifOn(judgeOn, func(j *Job) string { return fmt.Sprint(j.Judge.DropInvalid) })},
		{"judge.repair_attempts", ifOn(judgeOn, func(j *Job) string { return fmt.Sprint(j.Judge.RepairAttempts) })},
		{"empirical.enabled", func(j *Job) string { return fmt.Sprint(j.Empirical.Enabled) }},
		{"empirical.alpha", ifOn(empiricalOn, func(j *Job) string { return fmt.Sprint(j.Empirical.Alpha) })},
		{"empirical.repair_attempts", ifOn(empiricalOn, func(j *Job) string { return fmt.Sprint(j.Empirical.RepairAttempts) })},
		{"selection.min_correct", func(j *Job) string { return fmt.Sprint(j.Selection.MinCorrect) }},
		{"selection.min_incorrect", func(j *Job) string { return fmt.Sprint(j.Selection.MinIncorrect) }},
		{"split.validation", func(j *Job) string { return fmt.Sprint(j.Split.Validation) }},
		{"split.test", func(j *Job) string { return fmt.Sprint(j.Split.Test) }},
	}
	s = append(s, stageModelSettings(StageRollout, always, func(j *Job) (*Endpoint, *Sampling) { return &j.Rollout.Endpoint, &j.Rollout.Sampling })...)
	s = append(s, stageModelSettings(StageDistill, always, func(j *Job) (*Endpoint, *Sampling) { return &j.Distill.Endpoint, &j.Distill.Sampling })...)
	s = append(s, stageModelSettings(StageJudge, judgeOn, func(j *Job) (*Endpoint, *Sampling) { return &j.Judge.Endpoint, &j.Judge.Sampling })...)
	s = append(s, stageModelSettings(StageEmpirical, empiricalOn, func(j *Job) (*Endpoint, *Sampling) { return &j.Empirical.Endpoint, &j.Empirical.Sampling })...)
	return s
}

// stageModelSettings are a stage's model and sampling parameters.
func stageModelSettings(stage string, on func(*Job) bool, of func(*Job) (*Endpoint, *Sampling)) []setting {
	float := func(p *float64) string {
		if p == nil {
			return "server default"
		}
		return fmt.Sprint(*p)
	}
	return []setting{
		{stage + ".model", ifOn(on, func(j *Job) string { e, _ := of(j); return e.Model })},
		{stage + ".temperature", ifOn(on, func(j *Job) string { _, s := of(j); return float(s.Temperature) })},
		{stage + ".top_p", ifOn(on, func(j *Job) string { _, s := of(j); return float(s.TopP) })},
		{stage + ".max_tokens", ifOn(on, func(j *Job) string { _, s := of(j); return fmt.Sprint(s.MaxTokens) })},
	}
}

func always(*Job) bool        { return true }
func judgeOn(j *Job) bool     { return j.Judge.Enabled }
func empiricalOn(j *Job) bool { return j.Empirical.Enabled }

func ifOn(on func(*Job) bool, value func(*Job) string) func(*Job) string {
	return func(j *Job) string {
		if !on(j) {
			return "off"
		}
		return value(j)
	}
}

// stampVersions records in the job what it was run with besides its
// settings: the record layout, the answer verifier's policy and the hash of
// every template it sends. They enter the fingerprint, so a new verifier
// policy or template does not silently resume into old verdicts.
func (j *Job) stampVersions(ps *prompts.Set) {
	j.Versions = map[string]string{"spec": schema.SpecVersion, "verify_policy": verify.PolicyVersion}
	names := []string{prompts.Rollout, prompts.Repair, distillTemplate(j)}
	if j.Judge.Enabled {
		names = append(names, judgeTemplate(j))
	}
	if j.Empirical.Enabled {
		names = append(names, prompts.Satisfy)
	}
	j.TemplateHashes = map[string]string{}
	for _, n := range names {
		j.TemplateHashes[n] = ps.Hash(n)
	}
}

type identityLine struct{ key, value string }

// identityLines is the one list behind Fingerprint and ChangedSettings.
func (j *Job) identityLines() []identityLine {
	var out []identityLine
	for _, k := range sortedKeys(j.Versions) {
		out = append(out, identityLine{"versions." + k, j.Versions[k]})
	}
	for _, s := range resultSettings() {
		out = append(out, identityLine{s.path, s.value(j)})
	}
	for _, k := range sortedKeys(j.TemplateHashes) {
		out = append(out, identityLine{"template." + k, j.TemplateHashes[k]})
	}
	return out
}

// Fingerprint identifies what the run produces: 16 hex digits of xxhash64
// over identityLines. Call it on a normalized job after stampVersions.
func (j *Job) Fingerprint() string {
	var b strings.Builder
	for _, l := range j.identityLines() {
		fmt.Fprintf(&b, "%s=%s\n", l.key, l.value)
	}
	return fmt.Sprintf("%016x", xxhash.Sum64String(b.String()))
}

// ChangedSettings lists, one line each, what differs between the job that
// made a run directory and this one: "rollout.n: 4 → 6".
func ChangedSettings(old, cur *Job) []string {
	before := map[string]string{}
	for _, l := range old.identityLines() {
		before[l.key] = l.value
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range cur.identityLines() {
		seen[l.key] = true
		if was, ok := before[l.key]; !ok {
			out = append(out, fmt.Sprintf("%s: (not recorded) → %s", l.key, show(l.value)))
		} else if was != l.value {
			out = append(out, fmt.Sprintf("%s: %s → %s", l.key, show(was), show(l.value)))
		}
	}
	for _, l := range old.identityLines() {
		if !seen[l.key] {
			out = append(out, fmt.Sprintf("%s: %s → (not used)", l.key, show(l.value)))
		}
	}
	return out
}

func show(v string) string {
	if v == "" {
		return `""`
	}
	return v
}
