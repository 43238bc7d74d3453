package job

import (
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// Stage names, as they appear in failures.jsonl and report.json.
const (
	StageRollout   = "rollout"
	StageVerify    = "verify"
	StageSelect    = "select"
	StageDistill   = "distill"
	StageJudge     = "judge"
	StageEmpirical = "empirical"
	// The grounded style's stages (StageJudge and StageEmpirical too).
	StageAnalyze    = "analyze"
	StageSynthesize = "synthesize"
	StageEnrich     = "enrich"
	StageQuality    = "quality"
	// StageInternal is a failure of this program (a recovered panic), with
	// the stack in the log.
	StageInternal = "internal"
)

// An enriched criterion has at least these many keywords and concepts.
const (
	EnrichedKeywords = 3
	EnrichedConcepts = 2
)

func DistillTemplate(j *Job) string {
	if j.Style == schema.StyleFactualProcess {
		return prompts.DistillFactualProcess
	}
	return prompts.DistillSRaR
}

func JudgeTemplate(j *Job) string {
	if j.Judge.Mode == "item" {
		return j.JudgeLayout().Of(prompts.JudgeItem)
	}
	return j.JudgeLayout().Of(prompts.JudgeBatch)
}

// The judge layouts' names and the default response budget, for the
// commands' flags (prompts.Layout, prompts.View).
const (
	LayoutCache              = string(prompts.LayoutCache)
	LayoutPaper              = string(prompts.LayoutPaper)
	DefaultMaxResponseTokens = prompts.DefaultJudgeMaxResponseTokens
)

// JudgeLayout is the layout of the job's judge prompts (judge.layout; a
// job.yaml without it was made with the paper layout).
func (j *Job) JudgeLayout() prompts.Layout {
	if j.Judge.Layout == "" {
		return prompts.LayoutPaper
	}
	l, _ := prompts.ParseLayout(j.Judge.Layout)
	return l
}

// SatisfyTemplate is the template of the empirical stage's judge: the
// satisfaction judge's, or a grounded job's reward judge's, in the job's
// layout.
func SatisfyTemplate(j *Job) string {
	if j.Style == schema.StyleGrounded {
		return j.JudgeLayout().Of(prompts.ScoreGrounded)
	}
	return j.JudgeLayout().Of(prompts.Satisfy)
}

// GroupOn: the empirical stage runs and judges a record's responses in
// group requests (judge.group).
func GroupOn(j *Job) bool { return j.Empirical.Enabled && j.Judge.Group }

// GroupTemplate is the template of the empirical stage's group requests
// (judge.group): the satisfaction judge's, or a grounded job's reward
// judge's.
func GroupTemplate(j *Job) string {
	if j.Style == schema.StyleGrounded {
		return prompts.ScoreGroundedGroup
	}
	return prompts.SatisfyGroup
}

// JudgeView is how the empirical stage's judge is shown a response: the
// job's layout and response budget (empirical.max_response_tokens; none
// in a job.yaml without it).
func (j *Job) JudgeView() prompts.View {
	return prompts.View{Layout: j.JudgeLayout(), MaxResponseTokens: j.Empirical.MaxResponseTokens}
}

// DefaultMinPassageChars is grounded.min_passage_chars unless a job sets
// it: a question needs min_criteria (5) checkable points in its passage,
// and a point takes a clause of six to eight words, about 40 characters.
const DefaultMinPassageChars = 200

// StagePassage is the grounded style's first stage, a check without a
// request: a passage shorter than the minimum is left out.
const StagePassage = "passage"

// JudgePassageBudget is the judge passage budget of a grounded job whose
// judge or empirical stage shows a judge the passage; 0 otherwise.
func (j *Job) JudgePassageBudget() int {
	if !JudgesPassage(j) {
		return 0
	}
	return j.Grounded.JudgePassageTokens
}

func GroundedJudgeTemplate(j *Job) string {
	if j.Judge.Mode == "item" {
		return j.JudgeLayout().Of(prompts.GroundedJudgeItem)
	}
	return j.JudgeLayout().Of(prompts.GroundedJudgeBatch)
}

// LeftOutStage: a unit that ends at this stage was left out by a check,
// not failed; it is recorded in failures.jsonl, counted apart, and not
// retried by a resume.
func LeftOutStage(stage string) bool {
	return stage == StageSelect || stage == StageQuality || stage == StagePassage
}

// The token limits a grounded job's stages get when the job sets none
// (0), so that a model that does not stop cannot run every request to its
// context length: the distill endpoint's analyze, synthesize and enrich
// (a synthesis of K questions of up to 10 criteria each is some 2,500
// tokens a question; raise it for a model that reasons at length first),
// the validity judge's and the scorer's verdicts.
const (
	GroundedDistillMaxTokens = 8192
	GroundedJudgeMaxTokens   = 4096
)

// groundedTokenDefaults gives a grounded job's stages that set no token
// limit the defaults above.
func (j *Job) groundedTokenDefaults() {
	if j.Style != schema.StyleGrounded {
		return
	}
	for _, lim := range []struct {
		v   *int
		def int
	}{{&j.Distill.MaxTokens, GroundedDistillMaxTokens}, {&j.Judge.MaxTokens, GroundedJudgeMaxTokens}, {&j.Empirical.MaxTokens, GroundedJudgeMaxTokens}} {
		if *lim.v == 0 {
			*lim.v = lim.def
		}
	}
}
