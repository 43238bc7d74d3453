package job

import (
	"fmt"
	"maps"
	"slices"
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
	on    func(j *Job) bool // nil: always; else the setting counts only when on (its stage is enabled)
	// unstated is a value the fingerprint leaves out, so jobs written
	// before the setting existed keep their fingerprint ("": none).
	unstated string
}

// resultSettings are the job settings that change what a record holds. A
// disabled stage's settings do not count, so changing them changes nothing.
func resultSettings() []setting {
	s := []setting{
		{"style", func(j *Job) string { return j.Style }, nil, ""},
		{"input.source", func(j *Job) string { return j.Input.Source }, nil, ""},
		{"input.fields.problem", func(j *Job) string { return j.Input.Fields.Problem }, notGrounded, ""},
		{"input.fields.answer", func(j *Job) string { return j.Input.Fields.Answer }, notGrounded, ""},
		{"input.fields.id", func(j *Job) string { return j.Input.Fields.ID }, nil, ""},
		{"input.fields.source", func(j *Job) string { return j.Input.Fields.Source }, nil, ""},
		{"input.fields.reference", func(j *Job) string { return j.Input.Fields.Reference }, notGrounded, ""},
		{"input.fields.text", func(j *Job) string { return j.Input.Fields.Text }, grounded, ""},
		{"input.fields.title", func(j *Job) string { return j.Input.Fields.Title }, grounded, ""},
		{"grounded.passage_chars", func(j *Job) string { return fmt.Sprint(j.Grounded.PassageChars) }, grounded, ""},
		{"grounded.min_passage_chars", func(j *Job) string { return fmt.Sprint(j.Grounded.MinPassageChars) }, grounded, ""},
		{"grounded.questions_per_passage", func(j *Job) string { return fmt.Sprint(j.Grounded.QuestionsPerPassage) }, grounded, ""},
		{"grounded.min_criteria", func(j *Job) string { return fmt.Sprint(j.Grounded.MinCriteria) }, grounded, ""},
		{"grounded.max_criteria", func(j *Job) string { return fmt.Sprint(j.Grounded.MaxCriteria) }, grounded, ""},
		{"grounded.min_total_weight", func(j *Job) string { return fmt.Sprint(j.Grounded.MinTotalWeight) }, grounded, ""},
		{"grounded.max_copied_words", func(j *Job) string { return fmt.Sprint(j.Grounded.MaxCopiedWords) }, grounded, ""},
		{"grounded.enrich", func(j *Job) string { return fmt.Sprint(j.Grounded.Enrich) }, grounded, ""},
		{"grounded.analysis_chars", func(j *Job) string { return fmt.Sprint(j.Grounded.AnalysisChars) }, grounded, ""},
		{"grounded.judge_passage_tokens", func(j *Job) string { return fmt.Sprint(j.Grounded.JudgePassageTokens) }, JudgesPassage, ""},
		{"rollout.n", func(j *Job) string { return fmt.Sprint(j.Rollout.N) }, nil, ""},
		{"rollout.per_request", func(j *Job) string { return fmt.Sprint(j.Rollout.PerRequest) }, nil, ""},
		{"rollout.seed", func(j *Job) string { return fmt.Sprint(j.Rollout.Seed) }, nil, ""},
		{"distill.max_solutions", func(j *Job) string { return fmt.Sprint(j.Distill.MaxSolutions) }, notGrounded, ""},
		{"distill.max_solution_chars", func(j *Job) string { return fmt.Sprint(j.Distill.MaxSolutionChars) }, notGrounded, ""},
		{"distill.max_items", func(j *Job) string { return fmt.Sprint(j.Distill.MaxItems) }, notGrounded, ""},
		{"distill.repair_attempts", func(j *Job) string { return fmt.Sprint(j.Distill.RepairAttempts) }, nil, ""},
		{"judge.enabled", func(j *Job) string { return fmt.Sprint(j.Judge.Enabled) }, nil, ""},
		{"judge.mode", func(j *Job) string { return j.Judge.Mode }, JudgeOn, ""},
		{"judge.drop_invalid", func(j *Job) string { return fmt.Sprint(j.Judge.DropInvalid) }, JudgeOn, ""},
		{"judge.repair_attempts", func(j *Job) string { return fmt.Sprint(j.Judge.RepairAttempts) }, JudgeOn, ""},
		{"empirical.enabled", func(j *Job) string { return fmt.Sprint(j.Empirical.Enabled) }, nil, ""},
		{"empirical.alpha", func(j *Job) string { return fmt.Sprint(j.Empirical.Alpha) }, EmpiricalOn, ""},
		{"empirical.repair_attempts", func(j *Job) string { return fmt.Sprint(j.Empirical.RepairAttempts) }, EmpiricalOn, ""},
		{"empirical.open_book", func(j *Job) string { return fmt.Sprint(j.Empirical.OpenBook) }, groundedEmpirical, "false"},
		// A judging stage's seed at its default is left out, so jobs
		// written before seeds were pinned keep their fingerprint: their
		// judges ran unseeded at temperature 0, which a pinned seed does
		// not change in kind.
		{"judge.seed", func(j *Job) string { return fmt.Sprint(j.Judge.Seed) }, JudgeOn, "0"},
		{"judge.no_seed", func(j *Job) string { return fmt.Sprint(j.Judge.NoSeed) }, JudgeOn, "false"},
		{"empirical.seed", func(j *Job) string { return fmt.Sprint(j.Empirical.Seed) }, EmpiricalOn, "0"},
		{"empirical.no_seed", func(j *Job) string { return fmt.Sprint(j.Empirical.NoSeed) }, EmpiricalOn, "false"},
		{"judge.panel", func(j *Job) string { return panelSetting(j.Judge.Panel) }, JudgeOn, noPanel},
		{"empirical.panel", func(j *Job) string { return panelSetting(j.Empirical.Panel) }, EmpiricalOn, noPanel},
		{"judge.order", orderSetting, judgesOrdered, OrderRubric},
		{"judge.order_seed", func(j *Job) string { return fmt.Sprint(j.Judge.OrderSeed) }, func(j *Job) bool { return judgesOrdered(j) && j.Shuffled() }, ""},
		// A job.yaml made before layouts showed the judges the paper
		// layout and every response whole: such jobs keep their
		// fingerprint.
		{"judge.layout", func(j *Job) string { return string(j.JudgeLayout()) }, judgesOrdered, string(prompts.LayoutPaper)},
		{"empirical.max_response_tokens", func(j *Job) string { return fmt.Sprint(j.Empirical.MaxResponseTokens) }, EmpiricalOn, "0"},
		{"judge.group", func(j *Job) string { return fmt.Sprint(j.Judge.Group) }, EmpiricalOn, "false"},
		{"selection.min_correct", func(j *Job) string { return fmt.Sprint(j.Selection.MinCorrect) }, notGrounded, ""},
		{"selection.min_incorrect", func(j *Job) string { return fmt.Sprint(j.Selection.MinIncorrect) }, notGrounded, ""},
		{"split.validation", func(j *Job) string { return fmt.Sprint(j.Split.Validation) }, nil, ""},
		{"split.test", func(j *Job) string { return fmt.Sprint(j.Split.Test) }, nil, ""},
		{"partition", func(j *Job) string { return j.partitionSetting() }, nil, ""},
	}
	s = append(s, stageModelSettings(StageRollout, nil, func(j *Job) (*Endpoint, *Sampling) { return &j.Rollout.Endpoint, &j.Rollout.Sampling })...)
	s = append(s, stageModelSettings(StageDistill, nil, func(j *Job) (*Endpoint, *Sampling) { return &j.Distill.Endpoint, &j.Distill.Sampling })...)
	s = append(s, stageModelSettings(StageJudge, JudgeOn, func(j *Job) (*Endpoint, *Sampling) { return &j.Judge.Endpoint, &j.Judge.Sampling })...)
	s = append(s, stageModelSettings(StageEmpirical, EmpiricalOn, func(j *Job) (*Endpoint, *Sampling) { return &j.Empirical.Endpoint, &j.Empirical.Sampling })...)
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
		{stage + ".model", func(j *Job) string { e, _ := of(j); return e.Model }, on, ""},
		{stage + ".temperature", func(j *Job) string { _, s := of(j); return float(s.Temperature) }, on, ""},
		{stage + ".top_p", func(j *Job) string { _, s := of(j); return float(s.TopP) }, on, ""},
		{stage + ".max_tokens", func(j *Job) string { _, s := of(j); return fmt.Sprint(s.MaxTokens) }, on, ""},
	}
}

func JudgeOn(j *Job) bool     { return j.Judge.Enabled }
func grounded(j *Job) bool    { return j.Style == schema.StyleGrounded }
func notGrounded(j *Job) bool { return j.Style != schema.StyleGrounded }
func EmpiricalOn(j *Job) bool { return j.Empirical.Enabled }

// groundedEmpirical: a grounded job whose empirical stage runs.
func groundedEmpirical(j *Job) bool { return grounded(j) && EmpiricalOn(j) }

// OpenBookOn: a grounded job's empirical stage also samples open-book
// answers (empirical.open_book).
func OpenBookOn(j *Job) bool { return groundedEmpirical(j) && j.Empirical.OpenBook }

// JudgesPassage: a grounded job whose judge or empirical stage shows a
// judge the passage.
func JudgesPassage(j *Job) bool { return grounded(j) && (JudgeOn(j) || EmpiricalOn(j)) }

// StampVersions records in the job what it was run with besides its
// settings: the record layout, the answer verifier's policy, a grounded
// job's passage cutter (cutterVersion), and the hash of every template it sends. They enter the fingerprint, so a new verifier
// policy or template does not silently resume into old verdicts.
func (j *Job) StampVersions(ps *prompts.Set, cutterVersion string) {
	j.Versions = map[string]string{"spec": schema.SpecVersion, "verify_policy": verify.PolicyVersion}
	if j.Style == schema.StyleGrounded {
		j.Versions["passage_cutter"] = cutterVersion // the passages' texts under their ids
	}
	j.TemplateHashes = map[string]string{}
	for _, n := range TemplatesOf(j) {
		j.TemplateHashes[n] = ps.Hash(n)
	}
}

// TemplatesOf names every template the job's stages send.
func TemplatesOf(j *Job) []string {
	if j.Style == schema.StyleGrounded {
		names := []string{prompts.Repair, prompts.GroundedAnalyze, prompts.GroundedSynthesize}
		if j.Grounded.Enrich {
			names = append(names, prompts.GroundedEnrich)
		}
		if j.Judge.Enabled {
			names = append(names, GroundedJudgeTemplate(j))
		}
		if j.Empirical.Enabled {
			names = append(names, prompts.GroundedAnswer, SatisfyTemplate(j))
		}
		if GroupOn(j) {
			names = append(names, GroupTemplate(j))
		}
		if OpenBookOn(j) {
			names = append(names, prompts.GroundedAnswerOpen)
		}
		return names
	}
	names := []string{prompts.Rollout, prompts.Repair, DistillTemplate(j)}
	if j.Judge.Enabled {
		names = append(names, JudgeTemplate(j))
	}
	if j.Empirical.Enabled {
		names = append(names, SatisfyTemplate(j))
	}
	if GroupOn(j) {
		names = append(names, GroupTemplate(j))
	}
	return names
}

type identityLine struct{ key, value, unstated string }

// identityLines is the one list behind Fingerprint and ChangedSettings.
func (j *Job) identityLines() []identityLine {
	var out []identityLine
	for _, k := range slices.Sorted(maps.Keys(j.Versions)) {
		out = append(out, identityLine{"versions." + k, j.Versions[k], ""})
	}
	for _, s := range resultSettings() {
		if s.on == nil || s.on(j) {
			out = append(out, identityLine{s.path, s.value(j), s.unstated})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(j.TemplateHashes)) {
		out = append(out, identityLine{"template." + k, j.TemplateHashes[k], ""})
	}
	return out
}

// Fingerprint identifies what the run produces: 16 hex digits of xxhash64
// over identityLines. Call it on a normalized job after StampVersions.
func (j *Job) Fingerprint() string {
	var b strings.Builder
	for _, l := range j.identityLines() {
		if l.key == "partition" && l.value == partitionAll {
			continue // a whole-input job keeps the fingerprint it had before partitions existed
		}
		if l.unstated != "" && l.value == l.unstated {
			continue
		}
		fmt.Fprintf(&b, "%s=%s\n", l.key, l.value)
	}
	return fmt.Sprintf("%016x", xxhash.Sum64String(b.String()))
}

// Settings are the job's identity lines as name -> value: what the
// manifest's job history keeps of each job that ran in a directory (a
// setting at its unstated value is left out, as the fingerprint leaves it).
func (j *Job) Settings() map[string]string {
	out := map[string]string{}
	for _, l := range j.identityLines() {
		if l.unstated == "" || l.value != l.unstated {
			out[l.key] = l.value
		}
	}
	return out
}

// ChangedSettings lists, one line each, the settings that differ between
// the job that made a run directory and this one: "rollout.n: 4 → 6".
// Settings that one of the jobs does not use (those of a disabled stage)
// are not listed; the switch that disabled them is.
func ChangedSettings(old, cur *Job) []string {
	before := map[string]string{}
	for _, l := range old.identityLines() {
		before[l.key] = l.value
	}
	var out []string
	for _, l := range cur.identityLines() {
		was, ok := before[l.key]
		if !ok && strings.HasPrefix(l.key, "versions.") && len(old.Versions) > 0 {
			was, ok = "(none)", true // a version the older tool did not stamp
		}
		if ok && was != l.value {
			out = append(out, fmt.Sprintf("%s: %s → %s", l.key, ShowValue(was), ShowValue(l.value)))
		}
	}
	return out
}

func ShowValue(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// panelSetting is a panel's part of the fingerprint: each judge's name,
// model and sampling (noPanel, left out of the fingerprint, for none, so
// jobs without one keep their fingerprint). Endpoints and keys are left
// out, as they are for a stage's own model, and so is a judge's
// prompts_dir: its path depends on where distill is started, and what it
// holds is in the job's template hashes (the run stamps a judge's own
// templates, PanelTemplateKey).
func panelSetting(judges []PanelJudge) string {
	if len(judges) == 0 {
		return noPanel
	}
	float := func(p *float64) string {
		if p == nil {
			return "default"
		}
		return fmt.Sprint(*p)
	}
	var b strings.Builder
	for _, p := range judges {
		fmt.Fprintf(&b, "%q %q %s %s %d;", p.Name, p.Model, float(p.Temperature), float(p.TopP), p.MaxTokens)
	}
	return b.String()
}

const noPanel = "no panel"
