package prompts

import (
	"strings"
	"testing"
)

// renderLoops renders the training-time loops' templates with the fixed
// inputs of the golden tests.
func renderLoops(s *Set, name string) ([]Message, error) {
	switch name {
	case Rubricator:
		return s.RubricatorMessages(fixProblem, fixSolution)
	case RefineGuided:
		return s.RefineGuidedMessages(fixProblem, fixSolution, fixItems())
	default:
		return s.ElicitMessages(ElicitInput{Question: fixProblem, GroundTruth: fixAnswer, Items: fixItems(), Better: fixSolution, Worse: "### Step 1: Guess.\n<answer>7</answer>", Reference: fixSolution})
	}
}

// TestRefineGuidedSplitsGoalsAndMistakes: a failed positive criterion is a
// goal, a PITFALL fallen into a mistake to avoid, each in rubric order.
func TestRefineGuidedSplitsGoalsAndMistakes(t *testing.T) {
	s, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	items := fixItems()
	msgs, err := s.RefineGuidedMessages(fixProblem, fixSolution, items)
	if err != nil {
		t.Fatal(err)
	}
	user := msgs[len(msgs)-1].Content
	for _, it := range items {
		line := "- " + it.Text
		if it.Type == "PITFALL" {
			line = "- Avoid this mistake: " + it.Text
		}
		if !strings.Contains(user, line+"\n") {
			t.Errorf("the prompt has no line %q:\n%s", line, user)
		}
	}
	if !strings.Contains(user, "<previous_response>\n"+fixSolution+"\n</previous_response>") {
		t.Errorf("the response is not in the prompt as given:\n%s", user)
	}
}
