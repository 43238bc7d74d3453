package prompts

import "github.com/rubricforge/rubricforge/schema"

// GroundedAnalyzeMessages asks for the analysis of a passage (genre,
// contribution, concepts, depth, reasoning mode) as one JSON object.
func (s *Set) GroundedAnalyzeMessages(title, passage string) ([]Message, error) {
	return s.render(GroundedAnalyze, struct{ Title, Passage string }{title, passage})
}

// GroundedSynthesizeMessages asks for k question-rubric tuples about a
// passage, conditioned on its analysis, each rubric with between
// minCriteria and maxCriteria criteria carrying every field of seed 001's
// appendix E.
func (s *Set) GroundedSynthesizeMessages(title, passage string, a schema.Analysis, k, minCriteria, maxCriteria int) ([]Message, error) {
	return s.render(GroundedSynthesize, struct {
		Title, Passage              string
		Analysis                    schema.Analysis
		K, MinCriteria, MaxCriteria int
	}{title, passage, a, k, minCriteria, maxCriteria})
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
