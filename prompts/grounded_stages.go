package prompts

import "github.com/rubricforge/rubricforge/schema"

// DocumentView is a document as its analysis reads it: its title, its
// beginning (Head; Cut when the document goes on), its length in
// characters and its outline (its headings, one a line, indented by
// level; empty when it has none).
type DocumentView struct {
	Title, Head string
	Cut         bool
	Chars       int
	Outline     string
}

// GroundedAnalyzeMessages asks for the analysis of a document (genre,
// contribution, concepts, depth, reasoning mode) as one JSON object. The
// request depends on the document alone, so every passage of it sends the
// same one.
func (s *Set) GroundedAnalyzeMessages(doc DocumentView) ([]Message, error) {
	return s.render(GroundedAnalyze, doc)
}

// PassagePosition is where a passage sits in its document: passage Number
// (from 1) of Count, under the headings of Section ("Chapter > Section";
// empty when the document has none above it).
type PassagePosition struct {
	Number, Count int
	Section       string
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
// passage, conditioned on its document's analysis and its position in the
// document, within b, each criterion carrying every field of seed 001's
// appendix E.
func (s *Set) GroundedSynthesizeMessages(title, passage string, a schema.Analysis, pos PassagePosition, b RubricBounds) ([]Message, error) {
	return s.render(GroundedSynthesize, struct {
		Title, Passage              string
		Analysis                    schema.Analysis
		Position                    PassagePosition
		K, MinCriteria, MaxCriteria int
		MinWeight, MaxWeight        int
		MinTotalWeight              string
	}{title, passage, a, pos, b.K, b.MinCriteria, b.MaxCriteria, MinWeight, MaxWeight, FormatWeight(b.MinTotalWeight)})
}

// GroundedEnrichMessages asks to enrich every criterion of a question's
// rubric with the document's analysis in view: a concrete verification
// method, the terminology (keywords) and the concepts of each (seed 001's
// enrichment).
func (s *Set) GroundedEnrichMessages(passage, question string, a schema.Analysis, criteria []schema.Criterion) ([]Message, error) {
	return s.render(GroundedEnrich, struct {
		Passage, Question string
		Analysis          schema.Analysis
		Criteria          []schema.Criterion
	}{passage, question, a, criteria})
}

// GroundedJudgeBatchMessages asks whether each criterion of a question's
// rubric is valid against the passage; criterion i is shown with id i+1
// (in the cache layout; GroundedJudgeBatchMessagesIn for another).
func (s *Set) GroundedJudgeBatchMessages(passage, question string, criteria []schema.Criterion) ([]Message, error) {
	return s.GroundedJudgeBatchMessagesIn(LayoutCache, passage, question, criteria)
}

// GroundedJudgeItemMessages asks whether one criterion is valid against the
// passage (in the cache layout; GroundedJudgeItemMessagesIn for another).
func (s *Set) GroundedJudgeItemMessages(passage, question string, c schema.Criterion) ([]Message, error) {
	return s.GroundedJudgeItemMessagesIn(LayoutCache, passage, question, c)
}

// GroundedAnswerMessages asks for a closed-book answer: the question alone,
// never the passage.
func (s *Set) GroundedAnswerMessages(question string) ([]Message, error) {
	return s.render(GroundedAnswer, struct{ Question string }{question})
}

// GroundedAnswerOpenMessages asks for an open-book answer: the question
// with the passage (as the judge is shown it), for the empirical stage's
// open/closed-book edge.
func (s *Set) GroundedAnswerOpenMessages(passage, question string) ([]Message, error) {
	return s.render(GroundedAnswerOpen, struct{ Passage, Question string }{passage, question})
}
