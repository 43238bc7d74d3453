package prompts

import (
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// The prompts of the training-time loops (rewardd): RLCER's rubricator
// (seed 002), RGR-GRPO's guided refinement (seed 003, appendix E.2) and the
// pairwise elicitation of new criteria (OnlineRubrics).
const (
	// Rubricator asks the policy, in its rubricator role, for a rubric for
	// a question and one of its responses, in RLCER's output format
	// (schema.ParseRubricator).
	Rubricator = "rubricator"
	// RefineGuided asks the policy to refine its best response of a group
	// so that it meets the criteria that response failed.
	RefineGuided = "refine_guided"
	// Elicit asks an extractor model for criteria that separate a group's
	// better response from its worse one (schema.ParseElicited).
	Elicit = "elicit"
)

// RubricatorMessages renders the rubricator's prompt for question and one
// response to it.
func (s *Set) RubricatorMessages(question, response string) ([]Message, error) {
	return s.render(Rubricator, struct{ Question, Response string }{question, response})
}

// RefineGuidedMessages renders the refinement prompt of RGR's exploration
// assessment: the question, the response to refine and the criteria it
// failed, in rubric order: what a positive item asks for among the goals,
// a PITFALL fallen into among the mistakes to avoid.
func (s *Set) RefineGuidedMessages(question, response string, failed []schema.Item) ([]Message, error) {
	var goals, mistakes []string
	for _, it := range failed {
		if schema.PolarityOf(it.Type) < 0 || it.Polarity < 0 {
			mistakes = append(mistakes, it.Text)
		} else {
			goals = append(goals, it.Text)
		}
	}
	return s.render(RefineGuided, struct {
		Question, Response string
		Goals, Mistakes    []string
	}{question, response, goals, mistakes})
}

// ElicitInput is what the elicitation prompt compares.
type ElicitInput struct {
	Question, GroundTruth string
	Items                 []schema.Item // the problem's live rubric
	Better, Worse         string        // a group's best and worst responses
	Reference             string        // the corpus's verified strong-model rollout; "" when none
}

// ElicitMessages renders the pairwise elicitation prompt.
func (s *Set) ElicitMessages(in ElicitInput) ([]Message, error) {
	return s.render(Elicit, in)
}

// The loops' templates are checked with these sample inputs (Check).
func init() {
	samples[Rubricator] = func(s *Set) ([]Message, error) { return s.RubricatorMessages(sampleProblem, sampleSolution) }
	samples[RefineGuided] = func(s *Set) ([]Message, error) {
		return s.RefineGuidedMessages(sampleProblem, sampleSolution, sampleItems)
	}
	samples[Elicit] = func(s *Set) ([]Message, error) {
		return s.ElicitMessages(ElicitInput{Question: sampleProblem, GroundTruth: sampleAnswer, Items: sampleItems, Better: sampleSolution, Worse: sampleSolution})
	}
}

// Hints is a rubric written as in-prompt hints (RGR 5.2, RLCER 5.5): the
// criteria a solution should meet, then the mistakes to avoid, in rubric
// order, without the items that state a result (ANSWER, FACTUAL), which
// would give the answer away. "" when no item is left.
func Hints(items []schema.Item) string {
	var goals, mistakes []string
	for _, it := range items {
		switch {
		case it.Type == schema.TypeAnswer || it.Type == schema.TypeFactual:
		case it.Type == schema.TypePitfall || it.Polarity < 0:
			mistakes = append(mistakes, "- Avoid: "+strings.Join(strings.Fields(it.Text), " "))
		default:
			goals = append(goals, "- "+strings.Join(strings.Fields(it.Text), " "))
		}
	}
	if len(goals)+len(mistakes) == 0 {
		return ""
	}
	return "Keep these criteria in mind while you solve it:\n" + strings.Join(append(goals, mistakes...), "\n")
}
