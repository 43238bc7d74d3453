package prompts

import (
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// ScoreGroundedMessages asks the grounded style's reward judge (seed 001,
// appendix D) to score response, an answer to question written without the
// passage, against each criterion from 0 to its weight, with passage as the
// answer key, in the cache layout with the whole response shown
// (ScoreGroundedView for another view). The reply is parsed by
// schema.ParseGroundedScores with the same criteria. The caller bounds the
// passage (the corpus already holds it bounded by --passage-chars).
func (s *Set) ScoreGroundedMessages(passage, question, response string, criteria []schema.Criterion) ([]Message, error) {
	msgs, _, err := s.ScoreGroundedView(View{Layout: LayoutCache}, passage, question, response, criteria)
	return msgs, err
}

// criterionView is a criterion as the judge template shows it: lists joined,
// numbers in their shortest form.
type criterionView struct {
	Number                                          int
	ID, Name, Weight, Description, RequiredElements string
	ScoringGuide, ExpectedKeywords                  string
	VerificationMethod                              string
}

// FormatWeight writes a weight the way the judge is asked to echo it: the
// shortest decimal that reads back as the same float64 ("3", "1.5").
func FormatWeight(w float64) string { return strconv.FormatFloat(w, 'g', -1, 64) }

// listText joins a criterion's list field for the prompt; an empty list is
// shown as "(none)" so the line never looks cut off.
func listText(xs []string) string {
	var kept []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			kept = append(kept, x)
		}
	}
	if len(kept) == 0 {
		return "(none)"
	}
	return strings.Join(kept, "; ")
}
