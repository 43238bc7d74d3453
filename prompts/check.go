package prompts

import (
	"errors"
	"fmt"

	"github.com/rubricforge/rubricforge/schema"
)

// Check renders each named template once with sample inputs of the shape
// its stage gives it. Parsing a template cannot find a field its data does
// not have, or a function given the wrong kind of value: only executing it
// does. A run calls Check before its first request, so a broken override
// is refused before anything is paid for. The error names each broken
// template's file.
func (s *Set) Check(names ...string) error {
	var errs []error
	for _, name := range names {
		render, ok := samples[name]
		if !ok {
			errs = append(errs, fmt.Errorf("prompts: no sample inputs to check template %q with", name))
			continue
		}
		msgs, err := render(s)
		if err == nil && len(msgs) == 0 {
			err = errors.New("it renders no message")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("template %s (%s) fails on sample inputs: %w", name, s.origins[name], err))
		}
	}
	return errors.Join(errs...)
}

// Sample inputs, one of each kind a stage passes.
const (
	sampleProblem  = "Find the sum of the roots of x^2 - 5x + 6 = 0."
	sampleAnswer   = "5"
	sampleSolution = "Step 1: The roots are 2 and 3.\n\nStep 2: Their sum is 5.\n\n<answer>5</answer>"
	samplePassage  = "A write-ahead log appends every change before the data pages are modified, so recovery can replay it after a crash."
	sampleQuestion = "Why must a database log a change before it modifies its data pages?"
)

var (
	sampleItems = []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "Factor the quadratic.", Weight: 1, Polarity: 1},
		{ID: 2, Type: schema.TypePitfall, Text: "Takes the product of the roots instead of the sum.", Weight: 1, Polarity: -1},
	}
	sampleCriteria = []schema.Criterion{{
		ID: "c1", Weight: 3, Name: "Ordering", Description: "States that the log is written first.",
		RequiredElements: []string{"log before pages"}, ScoringGuide: "Full for the order.", VerificationMethod: "Check the order.",
		ExpectedKeywords: []string{"write-ahead"}, ExpectedConcepts: []string{"durability"},
	}}
	sampleAnalysis = schema.Analysis{Genre: "technical report", Contribution: "c", Concepts: []string{"durability"}, Depth: "intermediate", ReasoningMode: "causal"}
)

// samples renders each template through its typed function.
var samples = map[string]func(s *Set) ([]Message, error){
	Rollout: func(s *Set) ([]Message, error) { return s.RolloutMessages(sampleProblem) },
	DistillSRaR: func(s *Set) ([]Message, error) {
		return s.DistillSRaRMessages(sampleProblem, sampleAnswer, []Solution{{Index: 1, Correct: true, Text: sampleSolution}, {Index: 2, Text: "Step 1: 2 times 3 is 6."}}, 12)
	},
	DistillFactualProcess: func(s *Set) ([]Message, error) {
		return s.DistillFactualProcessMessages(sampleProblem, sampleSolution, sampleAnswer)
	},
	JudgeItem: func(s *Set) ([]Message, error) {
		return s.JudgeItemMessages(sampleProblem, sampleAnswer, sampleItems[0])
	},
	JudgeBatch: func(s *Set) ([]Message, error) { return s.JudgeBatchMessages(sampleProblem, sampleAnswer, sampleItems) },
	Satisfy: func(s *Set) ([]Message, error) {
		return s.SatisfyMessages(sampleProblem, sampleSolution, sampleAnswer, sampleItems)
	},
	Repair: func(s *Set) ([]Message, error) {
		return s.RepairMessages([]Message{{Role: "user", Content: sampleProblem}}, "not JSON", errors.New("the reply contains no JSON object"))
	},
	ScoreGrounded: func(s *Set) ([]Message, error) {
		return s.ScoreGroundedMessages(samplePassage, sampleQuestion, "Logging first lets recovery replay the change.", sampleCriteria)
	},
	GroundedAnalyze: func(s *Set) ([]Message, error) {
		return s.GroundedAnalyzeMessages(DocumentView{Title: "Logging", Head: samplePassage, Chars: len(samplePassage), Outline: "# Logging"})
	},
	GroundedSynthesize: func(s *Set) ([]Message, error) {
		return s.GroundedSynthesizeMessages("Logging", samplePassage, sampleAnalysis, PassagePosition{Number: 1, Count: 2, Section: "Logging"}, RubricBounds{K: 2, MinCriteria: 5, MaxCriteria: 10, MinTotalWeight: 5})
	},
	GroundedEnrich: func(s *Set) ([]Message, error) {
		return s.GroundedEnrichMessages(samplePassage, sampleQuestion, sampleAnalysis, sampleCriteria)
	},
	GroundedJudgeBatch: func(s *Set) ([]Message, error) {
		return s.GroundedJudgeBatchMessages(samplePassage, sampleQuestion, sampleCriteria)
	},
	GroundedJudgeItem: func(s *Set) ([]Message, error) {
		return s.GroundedJudgeItemMessages(samplePassage, sampleQuestion, sampleCriteria[0])
	},
	GroundedAnswer: func(s *Set) ([]Message, error) { return s.GroundedAnswerMessages(sampleQuestion) },
	Decompose: func(s *Set) ([]Message, error) {
		return s.DecomposeMessages(sampleProblem, sampleAnswer, sampleItems[0], []Solution{{Index: 1, Correct: true, Text: sampleSolution}, {Index: 2, Text: "Step 1: 2 times 3 is 6."}})
	},
	GroundedAnswerOpen: func(s *Set) ([]Message, error) {
		return s.GroundedAnswerOpenMessages(samplePassage, sampleQuestion)
	},
	SatisfyGroup: func(s *Set) ([]Message, error) {
		msgs, _, err := s.SatisfyGroupView(View{}, sampleProblem, sampleItems, []GroupSolution{{sampleSolution, sampleAnswer}, {"Step 1: 2 times 3 is 6.", "6"}}, []int{1, 0})
		return msgs, err
	},
	ScoreGroundedGroup: func(s *Set) ([]Message, error) {
		msgs, _, err := s.ScoreGroundedGroupView(View{}, samplePassage, sampleQuestion, sampleCriteria, []string{"Logging first lets recovery replay the change.", "The pages are written directly."}, []int{1, 0})
		return msgs, err
	},
	SatisfyPaper: func(s *Set) ([]Message, error) {
		msgs, _, err := s.SatisfyView(View{Layout: LayoutPaper}, sampleProblem, sampleSolution, sampleAnswer, sampleItems)
		return msgs, err
	},
	ScoreGroundedPaper: func(s *Set) ([]Message, error) {
		msgs, _, err := s.ScoreGroundedView(View{Layout: LayoutPaper}, samplePassage, sampleQuestion, "Logging first lets recovery replay the change.", sampleCriteria)
		return msgs, err
	},
	JudgeItemPaper: func(s *Set) ([]Message, error) {
		return s.JudgeItemMessagesIn(LayoutPaper, sampleProblem, sampleAnswer, sampleItems[0])
	},
	JudgeBatchPaper: func(s *Set) ([]Message, error) {
		return s.JudgeBatchMessagesIn(LayoutPaper, sampleProblem, sampleAnswer, sampleItems)
	},
	GroundedJudgeBatchPaper: func(s *Set) ([]Message, error) {
		return s.GroundedJudgeBatchMessagesIn(LayoutPaper, samplePassage, sampleQuestion, sampleCriteria)
	},
	GroundedJudgeItemPaper: func(s *Set) ([]Message, error) {
		return s.GroundedJudgeItemMessagesIn(LayoutPaper, samplePassage, sampleQuestion, sampleCriteria[0])
	},
}
