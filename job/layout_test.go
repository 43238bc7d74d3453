package job

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// TestJudgeLayoutSettings: judge.layout and empirical.max_response_tokens
// default to the cache layout and the default budget, are checked by name,
// enter the fingerprint, and read as the paper layout with no budget from a
// job.yaml written before them, whose fingerprint they leave as it was.
func TestJudgeLayoutSettings(t *testing.T) {
	t.Parallel()
	j := testJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
	j.Empirical.Enabled = true
	j.Normalize()
	if j.JudgeLayout() != prompts.LayoutCache || j.Empirical.MaxResponseTokens != prompts.DefaultJudgeMaxResponseTokens {
		t.Fatalf("defaults: layout %q, max_response_tokens %d", j.JudgeLayout(), j.Empirical.MaxResponseTokens)
	}
	if got := SatisfyTemplate(&j); got != prompts.Satisfy {
		t.Errorf("the cache layout's satisfy template is %q", got)
	}
	paper := j
	paper.Judge.Layout = string(prompts.LayoutPaper)
	if got := SatisfyTemplate(&paper); got != prompts.SatisfyPaper || JudgeTemplate(&paper) != prompts.JudgeBatchPaper {
		t.Errorf("the paper layout's templates: %q, %q", got, JudgeTemplate(&paper))
	}
	if paper.Fingerprint() == j.Fingerprint() {
		t.Error("judge.layout does not change the fingerprint")
	}
	budget := j
	budget.Empirical.MaxResponseTokens = 4096
	if budget.Fingerprint() == j.Fingerprint() {
		t.Error("empirical.max_response_tokens does not change the fingerprint")
	}
	for _, tc := range []struct {
		edit func(*Job)
		says string
	}{
		{func(j *Job) { j.Judge.Layout = "newspaper" }, `judge.layout: "newspaper" is not cache or paper`},
		{func(j *Job) { j.Empirical.MaxResponseTokens = 100 }, "empirical.max_response_tokens: 100 is below 256"},
	} {
		bad := j
		tc.edit(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Validate: %v; want %q", err, tc.says)
		}
	}
	none := j
	none.Empirical.MaxResponseTokens = -1
	if err := none.Validate(); err != nil {
		t.Errorf("max_response_tokens -1 (no budget): %v", err)
	}
	older := DefaultJob() // a job.yaml written before layouts
	if err := yaml.Unmarshal([]byte("empirical: {enabled: true}\n"), &older); err != nil {
		t.Fatal(err)
	}
	if older.JudgeLayout() != prompts.LayoutPaper || older.JudgeView().MaxResponseTokens != 0 {
		t.Errorf("an older job.yaml reads as layout %q, budget %d; want paper and none", older.JudgeLayout(), older.JudgeView().MaxResponseTokens)
	}
	for _, l := range older.identityLines() {
		if (l.key == "judge.layout" || l.key == "empirical.max_response_tokens") && l.value != l.unstated {
			t.Errorf("an older job.yaml's %s = %q enters its fingerprint", l.key, l.value)
		}
	}
}

// TestJudgeGroupSetting: judge.group is off by default, changes the
// fingerprint and adds the group template to the job's templates (math and
// grounded) when on, leaves a job without it as it was, and needs the
// cache layout.
func TestJudgeGroupSetting(t *testing.T) {
	t.Parallel()
	j := testJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
	j.Empirical.Enabled = true
	j.Normalize()
	if j.Judge.Group || slices.Contains(TemplatesOf(&j), prompts.SatisfyGroup) {
		t.Fatalf("judge.group is on by default (templates %v)", TemplatesOf(&j))
	}
	group := j
	group.Judge.Group = true
	if group.Fingerprint() == j.Fingerprint() {
		t.Error("judge.group does not change the fingerprint")
	}
	if err := group.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if !slices.Contains(TemplatesOf(&group), prompts.SatisfyGroup) || GroupTemplate(&group) != prompts.SatisfyGroup {
		t.Errorf("a math job with judge.group sends templates %v", TemplatesOf(&group))
	}
	grounded := group
	grounded.Style = schema.StyleGrounded
	if !slices.Contains(TemplatesOf(&grounded), prompts.ScoreGroundedGroup) || GroupTemplate(&grounded) != prompts.ScoreGroundedGroup {
		t.Errorf("a grounded job with judge.group sends templates %v", TemplatesOf(&grounded))
	}
	for _, l := range j.identityLines() {
		if l.key == "judge.group" && l.value != l.unstated {
			t.Errorf("a job without judge.group has the identity line %s=%s", l.key, l.value)
		}
	}
	paper := group
	paper.Judge.Layout = string(prompts.LayoutPaper)
	if err := paper.Validate(); err == nil || !strings.Contains(err.Error(), "judge.group") {
		t.Errorf("judge.group with the paper layout: Validate %v; want an error naming judge.group", err)
	}
}
