package schema

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// GroundedLabel is what a grounded question's label carries besides the
// question: the passage the judge reads as the answer key and the criteria
// it scores against. The label's Question is the question the policy saw and
// its ID is QuestionID(RecordID, Index).
type GroundedLabel struct {
	RecordID  string      `json:"record_id"` // the passage's record
	Index     int32       `json:"index"`     // the question's index in the record
	DocID     string      `json:"doc_id"`
	PassageID string      `json:"passage_id"`
	Title     string      `json:"title"`
	Passage   string      `json:"passage"`
	DocHash   string      `json:"doc_hash"`
	Criteria  []Criterion `json:"criteria"`
}

// QuestionLabel is the label of question q of the grounded record rec: id
// QuestionID(rec.ID, q.Index), scheme and style grounded, the question, no
// ground truth, an empty rubric, and the passage and criteria (with the
// validity verdicts and empirical figures) in Grounded.
func QuestionLabel(rec *Record, q *GroundedQuestion) Label {
	g := rec.Grounded
	return Label{
		V: SpecVersion, ID: QuestionID(rec.ID, q.Index), DataSource: rec.Source,
		Scheme: SchemeGrounded, Style: StyleGrounded, Question: q.Question, Rubric: []Item{},
		Grounded: &GroundedLabel{
			RecordID: rec.ID, Index: q.Index, DocID: g.DocID, PassageID: g.PassageID, Title: g.Title,
			Passage: g.Passage, DocHash: g.DocHash, Criteria: slices.Clone(q.Criteria),
		},
	}
}

// QuestionLabels are the labels of every question of a grounded record, in
// question order; nil for a record without a grounded payload.
func QuestionLabels(rec *Record) []Label {
	if rec.Grounded == nil {
		return nil
	}
	out := make([]Label, len(rec.Grounded.Questions))
	for k := range rec.Grounded.Questions {
		out[k] = QuestionLabel(rec, &rec.Grounded.Questions[k])
	}
	return out
}

// checkGrounded checks a grounded question's label: style and scheme
// grounded, a question, an empty rubric, a passage, and criteria with
// distinct non-empty ids and finite non-negative weights of positive total.
func (l *Label) checkGrounded() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("label.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if l.Style != StyleGrounded {
		bad("style", "%q with a grounded payload; a grounded question's style is %q", l.Style, StyleGrounded)
	}
	if l.Scheme != "" && l.Scheme != SchemeGrounded {
		bad("scheme", "%q; a grounded question is scored only under %q", l.Scheme, SchemeGrounded)
	}
	if strings.TrimSpace(l.Question) == "" {
		bad("question", "empty; a grounded question's label needs the question the judge shows")
	}
	if len(l.Rubric) > 0 {
		bad("rubric", "%d items; a grounded question's criteria go in grounded.criteria", len(l.Rubric))
	}
	g := l.Grounded
	if g == nil {
		bad("grounded", "missing; a grounded question's label carries its passage and criteria")
		return errors.Join(errs...)
	}
	if strings.TrimSpace(g.Passage) == "" {
		bad("grounded.passage", "empty; the judge scores against the passage")
	}
	if len(g.Criteria) == 0 {
		bad("grounded.criteria", "no criteria")
	}
	seen := map[string]bool{}
	for i, c := range g.Criteria {
		f := fmt.Sprintf("grounded.criteria[%d]", i)
		switch {
		case strings.TrimSpace(c.ID) == "":
			bad(f+".id", "empty")
		case seen[c.ID]:
			bad(f+".id", "%q appears twice", c.ID)
		}
		seen[c.ID] = true
		if math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) || c.Weight < 0 || c.Weight > MaxLabelWeight {
			bad(f+".weight", "%v is out of range: a criterion's weight must be a number from 0 to %g", c.Weight, MaxLabelWeight)
		}
	}
	if w := TotalWeight(g.Criteria); len(g.Criteria) > 0 && !(w > 0) && !math.IsNaN(w) {
		bad("grounded.criteria", "total weight %v; a reward is the score over the total weight, which must be positive", w)
	}
	if len(errs) == 0 && l.Scheme == "" {
		l.Scheme = SchemeGrounded
	}
	return errors.Join(errs...)
}

// Check checks a label built in memory (QuestionLabel, LabelOf) the way
// ParseLabel checks a decoded one.
func (l *Label) Check() error { return l.check() }
