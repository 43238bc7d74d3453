package corpus

import (
	"fmt"
	"os"

	"github.com/rubricforge/rubricforge/schema"
)

// Grounded records (style grounded, seed 001) hold one passage and its K
// questions. Every format but jsonl writes one row per question, with id
// schema.QuestionID(record id, k): the prompt is the question alone, and
// the passage and criteria travel where the judge reads them (the label,
// extra_info, rar's reference_answer and rubric).

// verlAbilityGrounded is the verl ability of a grounded question.
const verlAbilityGrounded = "grounded"

// HasGroundedColumn reports whether the shard at path has the grounded
// column (shards written before the grounded style do not).
func HasGroundedColumn(path string) (bool, error) { return HasColumn(path, "grounded", "doc_id") }

// HasColumn reports whether the shard at path has the leaf column at the
// path leaf (a list's leaves are under "list", "element"): the optional
// columns later layouts added (grounded, panel) are absent from older
// shards.
func HasColumn(path string, leaf ...string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("opening shard: %w", err)
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("opening shard: %w", err)
	}
	pf, err := openParquet(f, path, st.Size())
	if err != nil {
		return false, err
	}
	_, ok := pf.Schema().Lookup(leaf...) // Lookup finds leaf columns only
	return ok, nil
}

// rowRecords are the records a format writes a row for: rec itself, or for
// a grounded record in a row format (every format but jsonl, which writes
// whole records), one view per question holding only that question.
func rowRecords(format *exportFormat, rec *schema.Record) []*schema.Record {
	if rec.Grounded == nil || format.name == FormatJSONL {
		return []*schema.Record{rec}
	}
	out := make([]*schema.Record, len(rec.Grounded.Questions))
	for k := range rec.Grounded.Questions {
		view, g := *rec, *rec.Grounded
		g.Questions = rec.Grounded.Questions[k : k+1]
		view.Grounded = &g
		out[k] = &view
	}
	return out
}

// question is the one question of a per-question view.
func question(rec *schema.Record) (*schema.GroundedQuestion, error) {
	if rec.Grounded == nil || len(rec.Grounded.Questions) != 1 {
		return nil, fmt.Errorf("record %s: a grounded row is made from one question", rec.ID)
	}
	return &rec.Grounded.Questions[0], nil
}

// verlGrounded is the verl row of a grounded question: the prompt is the
// question alone (with the --system-prompt message); extra_info carries the
// passage and the criteria as JSON, the label the whole reward spec.
func (m rowMaker) verlGrounded(rec *schema.Record, index int64) (VerlRow, error) {
	q, err := question(rec)
	if err != nil {
		return VerlRow{}, err
	}
	lab := schema.QuestionLabel(rec, q)
	criteria, err := marshalJSON(nonNil(q.Criteria))
	if err != nil {
		return VerlRow{}, fmt.Errorf("question %s: encoding the criteria: %w", lab.ID, err)
	}
	label, err := marshalJSON(lab)
	if err != nil {
		return VerlRow{}, fmt.Errorf("question %s: encoding the label: %w", lab.ID, err)
	}
	return VerlRow{
		DataSource:  dataSource(rec),
		Prompt:      m.prompts.question(q.Question),
		Ability:     verlAbilityGrounded,
		RewardModel: VerlRewardModel{Style: verlStyle},
		ExtraInfo: VerlExtraInfo{
			Split: rec.Split, Index: index, ID: lab.ID, Question: q.Question, Rubric: criteria,
			Scheme: schema.SchemeGrounded, SpecVersion: schema.SpecVersion, Passage: rec.Grounded.Passage,
		},
		Label: label,
	}, nil
}

// rarGrounded is the rar row of a grounded question: the criteria as
// {title: name, description, weight}, the passage as the reference answer
// (what a RaR judge is shown as grounding).
func rarGrounded(rec *schema.Record) (RaRRow, error) {
	q, err := question(rec)
	if err != nil {
		return RaRRow{}, err
	}
	items := make([]RaRItem, len(q.Criteria))
	for i, c := range q.Criteria {
		items[i] = RaRItem{Title: c.Name, Description: c.Description, Weight: c.Weight}
	}
	return RaRRow{Question: q.Question, ReferenceAnswer: rec.Grounded.Passage, QuestionSource: rec.Source, Rubric: items,
		ID: schema.QuestionID(rec.ID, q.Index)}, nil
}

// dropInvalidCriteria is dropInvalid for a grounded record: the criteria the
// validity judge marked invalid are removed from each question; a question
// left without criteria of positive total weight is removed. The record
// holds while a question remains. dropped counts the criteria removed.
func dropInvalidCriteria(rec *schema.Record) (dropped int, holds bool) {
	g := *rec.Grounded
	g.Questions = make([]schema.GroundedQuestion, 0, len(rec.Grounded.Questions))
	for _, q := range rec.Grounded.Questions {
		kept := make([]schema.Criterion, 0, len(q.Criteria))
		for _, c := range q.Criteria {
			if c.Valid != nil && !*c.Valid {
				dropped++
				continue
			}
			kept = append(kept, c)
		}
		if schema.TotalWeight(kept) > 0 {
			q.Criteria = kept
			g.Questions = append(g.Questions, q)
		}
	}
	rec.Grounded = &g
	return dropped, len(g.Questions) > 0
}

// fullGrounded is g with every list empty rather than null, as the jsonl
// format writes records.
func fullGrounded(g *schema.Grounded) *schema.Grounded {
	if g == nil {
		return nil
	}
	out := *g
	out.Analysis.Concepts = nonNil(g.Analysis.Concepts)
	out.Questions = make([]schema.GroundedQuestion, len(g.Questions))
	for k, q := range g.Questions {
		crit := make([]schema.Criterion, len(q.Criteria))
		for i, c := range q.Criteria {
			c.RequiredElements = nonNil(c.RequiredElements)
			c.ExpectedKeywords = nonNil(c.ExpectedKeywords)
			c.ExpectedConcepts = nonNil(c.ExpectedConcepts)
			crit[i] = c
		}
		q.Criteria = crit
		q.Answers = fullAnswers(q.Answers)
		if len(q.OpenBookAnswers) > 0 {
			q.OpenBookAnswers = fullAnswers(q.OpenBookAnswers)
		}
		out.Questions[k] = q
	}
	return &out
}

// fullAnswers is as with every answer's scores an empty list rather than null.
func fullAnswers(as []schema.GroundedAnswer) []schema.GroundedAnswer {
	out := make([]schema.GroundedAnswer, len(as))
	for i, a := range as {
		a.Scores = nonNil(a.Scores)
		out[i] = a
	}
	return out
}

// cardCriterionType is the row of the card's validity table that counts
// grounded criteria; its empirical column counts the criteria whose score
// varies over the closed-book answers.
const cardCriterionType = "grounded criterion"

// groundedIn counts a grounded record's criteria for the card.
func (s *exportStats) groundedIn(rec *schema.Record) {
	if rec.Grounded == nil {
		return
	}
	for _, q := range rec.Grounded.Questions {
		for _, cr := range q.Criteria {
			c := s.typeCounts(cardCriterionType)
			c.items++
			switch {
			case cr.Valid == nil:
				c.unjudged++
			case *cr.Valid:
				c.valid++
			default:
				c.invalid++
			}
			if cr.Varies != nil {
				c.empMeasured++
				if *cr.Varies {
					c.empValid++
				}
			}
		}
	}
}

// groundedOut counts the criteria of a grounded record as written.
func (s *exportStats) groundedOut(rec *schema.Record) {
	if rec.Grounded == nil {
		return
	}
	for _, q := range rec.Grounded.Questions {
		s.typeCounts(cardCriterionType).exported += int64(len(q.Criteria))
	}
}
