package prompts

import "github.com/rubricforge/rubricforge/schema"

// GroundedAnalyzeMessages asks for the analysis of a passage (genre,
// contribution, concepts, depth, reasoning mode) as one JSON object.
func (s *Set) GroundedAnalyzeMessages(title, passage string) ([]Message, error) {
	return s.render(GroundedAnalyze, struct{ Title, Passage string }{title, passage})
}

// RubricBounds are what the synthesis is asked to keep to: K tuples, each
// rubric with between MinCriteria and MaxCriteria criteria whose weights,
// on the scale the template states (MinWeight to MaxWeight), add up to at
// least MinTotalWeight (the quality check's minimum).
type RubricBounds struct {
	K, MinCriteria, MaxCriteria int
	MinTotalWeight              float64
}

// The weight scale the synthesis template states (seed 003's 1-5).
const (
	MinWeight = 1
	MaxWeight = 5
)

// GroundedSynthesizeMessages asks for question-rubric tuples about a
// passage, conditioned on its analysis, within b, each criterion carrying
// every field of seed 001's appendix E.
func (s *Set) GroundedSynthesizeMessages(title, passage string, a schema.Analysis, b RubricBounds) ([]Message, error) {
	return s.render(GroundedSynthesize, struct {
		Title, Passage              string
		Analysis                    schema.Analysis
		K, MinCriteria, MaxCriteria int
		MinWeight, MaxWeight        int
		MinTotalWeight              string
	}{title, passage, a, b.K, b.MinCriteria, b.MaxCriteria, MinWeight, MaxWeight, FormatWeight(b.MinTotalWeight)})
}

// GroundedEnrichMessages asks to complete thin criteria of a question's
// rubric: verification method, keywords and concepts.
func (s *Set) GroundedEnrichMessages(passage, question string, thin []schema.Criterion) ([]Message, error) {
	return s.render(GroundedEnrich, struct {
		Passage, Question string
		Criteria          []schema.Criterion
	}{passage, question, thin})
}

// GroundedJudgeBatchMessages asks whether each criterion of a question's
// rubric is valid against the passage; criterion i is shown with id i+1.
func (s *Set) GroundedJudgeBatchMessages(passage, question string, criteria []schema.Criterion) ([]Message, error) {
	return s.render(GroundedJudgeBatch, struct {
		Passage, Question string
		Criteria          []schema.Criterion
	}{passage, question, criteria})
}

// GroundedJudgeItemMessages asks whether one criterion is valid against the
// passage.
func (s *Set) GroundedJudgeItemMessages(passage, question string, c schema.Criterion) ([]Message, error) {
	return s.render(GroundedJudgeItem, struct {
		Passage, Question string
		Criterion         schema.Criterion
	}{passage, question, c})
}

// GroundedAnswerMessages asks for a closed-book answer: the question alone,
// never the passage.
func (s *Set) GroundedAnswerMessages(question string) ([]Message, error) {
	return s.render(GroundedAnswer, struct{ Question string }{question})
}
