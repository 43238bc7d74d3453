package schema

import "fmt"

// StyleGrounded is the document-grounded style of seed 001 (Rubric-Grounded
// RL): a passage of a scientific or technical document becomes questions,
// each with weighted criteria grounded in the passage. The policy answers the
// question without the passage; a judge scores the answer with the passage
// and the criteria.
const StyleGrounded = "grounded"

// Grounded is the payload of a grounded record (Record.Grounded; nil for the
// math styles). The unit of work is one passage: the record's ID is the
// passage's id (PassageRecordID), and it holds the K questions synthesized
// from it, so every question of a passage lands in the same split.
type Grounded struct {
	DocID        string `parquet:"doc_id" json:"doc_id"`
	PassageID    string `parquet:"passage_id" json:"passage_id"` // DocID + "#" + PassageIndex
	PassageIndex int32  `parquet:"passage_index" json:"passage_index"`
	Title        string `parquet:"title" json:"title"`
	Passage      string `parquet:"passage" json:"passage"` // bounded by --passage-chars
	// DocHash is the content hash of the passage (seed 001 appendix E's doc_hash):
	// 16 hex digits of xxhash64 over its trimmed text.
	DocHash   string             `parquet:"doc_hash" json:"doc_hash"`
	Analysis  Analysis           `parquet:"analysis" json:"analysis"`
	Questions []GroundedQuestion `parquet:"questions,list" json:"questions"`
}

// Analysis is the analyze stage's reading of a passage's document
// (appendix E's document_analysis): the same for every passage of one
// document.
type Analysis struct {
	Genre         string   `parquet:"genre" json:"genre"`
	Contribution  string   `parquet:"contribution" json:"contribution"`
	Concepts      []string `parquet:"concepts,list" json:"concepts"`
	Depth         string   `parquet:"depth" json:"depth"`
	ReasoningMode string   `parquet:"reasoning_mode" json:"reasoning_mode"`
}

// GroundedQuestion is one question-rubric tuple of a passage. Index is its
// position among the passage's questions, from 0; its id for export and
// scoring is QuestionID(record id, Index).
type GroundedQuestion struct {
	Index     int32       `parquet:"index" json:"index"`
	Question  string      `parquet:"question" json:"question"`
	Rationale string      `parquet:"rationale" json:"question_rationale"`
	Criteria  []Criterion `parquet:"criteria,list" json:"criteria"`
	// Answers are the empirical stage's closed-book answers and their
	// scores; empty when the stage was off.
	Answers []GroundedAnswer `parquet:"answers,list" json:"answers"`
	// OpenBookAnswers are the empirical stage's open-book answers (written
	// with the passage in the prompt, empirical.open_book) and their scores,
	// scored like Answers; a criterion's edge is its mean score here minus
	// its mean score there, over its weight (discrim.GroundedEdge). Empty
	// when the option was off, and in corpora written before it (their
	// shards lack the column and read as empty lists).
	OpenBookAnswers []GroundedAnswer `parquet:"open_book_answers,list" json:"open_book_answers,omitempty"`
}

// Criterion is one weighted, passage-grounded criterion (appendix E).
type Criterion struct {
	ID                 string   `parquet:"id" json:"id"`
	Weight             float64  `parquet:"weight" json:"weight"`
	Name               string   `parquet:"name" json:"name"`
	Description        string   `parquet:"description" json:"description"`
	RequiredElements   []string `parquet:"required_elements,list" json:"required_elements"`
	ScoringGuide       string   `parquet:"scoring_guide" json:"scoring_guide"`
	VerificationMethod string   `parquet:"verification_method" json:"verification_method"`
	ExpectedKeywords   []string `parquet:"expected_keywords,list" json:"expected_keywords"`
	ExpectedConcepts   []string `parquet:"expected_concepts,list" json:"expected_concepts"`
	// Valid and ValidReason come from the validity judge (against the
	// passage); nil when not judged.
	Valid       *bool   `parquet:"valid,optional" json:"valid,omitempty"`
	ValidReason *string `parquet:"valid_reason,optional" json:"valid_reason,omitempty"`
	// ScoreMean and Varies come from the empirical stage: the mean score as
	// a fraction of the weight over the closed-book answers, and whether the
	// score differs between them (a criterion every answer meets, or none
	// does, carries no training signal). Nil when not measured.
	ScoreMean *float64 `parquet:"score_mean,optional" json:"score_mean,omitempty"`
	Varies    *bool    `parquet:"varies,optional" json:"varies,omitempty"`
}

// GroundedAnswer is one answer of the empirical stage (closed-book, or
// open-book in GroundedQuestion.OpenBookAnswers) and the
// judge's scores for it, one per criterion in criterion order (each from 0
// to the criterion's weight). Scores is empty when the judgment failed.
type GroundedAnswer struct {
	Index  int32     `parquet:"index" json:"index"`
	Text   string    `parquet:"text" json:"text"`
	Scores []float64 `parquet:"scores,list" json:"scores"`
}

// QuestionID is the id of question k of the grounded record id: the id an
// export row, a label and rewardd use for it.
func QuestionID(recordID string, k int32) string { return fmt.Sprintf("%s-q%d", recordID, k) }

// TotalWeight is W, the sum of the criteria's weights.
func TotalWeight(cs []Criterion) float64 {
	var w float64
	for _, c := range cs {
		w += c.Weight
	}
	return w
}

// PassageRecordID is the id of the record of passage index of document
// docID: the document id, "#" and the index from 0.
func PassageRecordID(docID string, index int32) string { return fmt.Sprintf("%s#%d", docID, index) }
