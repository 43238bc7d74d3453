package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// The rar and srar-lines exports carry no label column: their rows are
// turned back into the record fields a label needs.

// scanRaR reads a rar export file: rubric items as {title, description,
// weight}, the title the item type, the weight signed: its magnitude is
// the item's weight, a negative sign (a PITFALL's, or any criterion's in a
// rar file written elsewhere) makes its polarity -1, as a PITFALL's always
// is (examples/trainers/verifiers_rubric.py maps a rar row the same way).
func (l *loader) scanRaR(file string) error {
	l.stats.Files++
	row := 0
	return corpus.Scan(file, func(r *corpus.RaRRow) error {
		row++
		if lab, ok := rarGroundedLabel(r); ok {
			l.stats.Records++
			if err := lab.Check(); err != nil {
				l.skip(file, row, err)
				return nil
			}
			l.stats.Grounded++
			if !l.x.add(&lab, l.split("")) {
				l.stats.Duplicates++
			}
			return nil
		}
		rec, err := rarRecord(r)
		if err != nil {
			l.stats.Records++
			l.skip(file, row, err)
			return nil
		}
		l.addRecord(rec, file, row)
		return nil
	})
}

// rarGroundedLabel reads the rar row of a grounded question, as distill
// export writes one: its id a question id (RECORD-qK), its reference
// answer the passage, and its rubric the criteria as {title: the name,
// description, weight}, no title an item type. The criteria get the ids
// c1, c2, ... in order (a rar row keeps no id, nor the criteria's required
// elements, scoring guides and keywords, which the judge is then not
// shown: a verl or jsonl export keeps them). ok is false for any other row.
func rarGroundedLabel(r *corpus.RaRRow) (schema.Label, bool) {
	record, index, ok := splitQuestionID(r.ID)
	if !ok || len(r.Rubric) == 0 {
		return schema.Label{}, false
	}
	var crit []schema.Criterion
	for i, it := range r.Rubric {
		if isItemType(strings.ToUpper(strings.TrimSpace(it.Title))) {
			return schema.Label{}, false
		}
		crit = append(crit, schema.Criterion{ID: fmt.Sprintf("c%d", i+1), Name: it.Title, Description: it.Description, Weight: it.Weight})
	}
	return schema.Label{
		V: schema.SpecVersion, ID: r.ID, DataSource: r.QuestionSource, Scheme: schema.SchemeGrounded, Style: schema.StyleGrounded,
		Question: r.Question, Rubric: []schema.Item{},
		Grounded: &schema.GroundedLabel{RecordID: record, Index: index, Passage: r.ReferenceAnswer, Criteria: crit},
	}, true
}

func rarRecord(r *corpus.RaRRow) (*rubricRow, error) {
	rec := &rubricRow{ID: r.ID, Source: r.QuestionSource, Problem: r.Question, Answer: r.ReferenceAnswer, Style: schema.StyleSRaR}
	for i, it := range r.Rubric {
		typ := strings.ToUpper(strings.TrimSpace(it.Title))
		switch typ {
		case schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer:
		case schema.TypeFactual, schema.TypeProcess:
			rec.Style = schema.StyleFactualProcess
		default:
			return nil, fmt.Errorf("rubric[%d].title %q is not an item type (SUGGEST, PITFALL, BONUS, ANSWER, FACTUAL, PROCESS); rewardd reads the rar files distill export writes", i, it.Title)
		}
		polarity := schema.PolarityOf(typ)
		if it.Weight < 0 {
			polarity = -1 // a negative weight counts against the response, whatever the item's type
		}
		rec.Rubric = append(rec.Rubric, schema.Item{ID: int32(i + 1), Type: typ, Text: it.Description,
			Weight: math.Abs(it.Weight), Polarity: polarity})
	}
	return rec, nil
}

// scanSRaRLines reads a srar-lines export file: the rubric as SRaR's
// tagged lines.
func (l *loader) scanSRaRLines(file string) error {
	l.stats.Files++
	row := 0
	return corpus.Scan(file, func(r *corpus.SRaRLinesRow) error {
		row++
		parsed, err := schema.ParseSRaR(r.Rubric, schema.SRaROptions{})
		if err != nil {
			l.stats.Records++
			l.skip(file, row, fmt.Errorf("the rubric lines: %w", err))
			return nil
		}
		l.addRecord(&rubricRow{ID: r.ID, Problem: r.Problem, Answer: r.GroundTruth, Style: schema.StyleSRaR, Rubric: parsed.Items}, file, row)
		return nil
	})
}

// splitQuestionID splits a grounded question's id (schema.QuestionID:
// RECORD-qK) into its record id and index.
func splitQuestionID(id string) (record string, index int32, ok bool) {
	i := strings.LastIndex(id, "-q")
	if i <= 0 {
		return "", 0, false
	}
	k, err := strconv.ParseInt(id[i+2:], 10, 32)
	if err != nil || k < 0 || schema.QuestionID(id[:i], int32(k)) != id {
		return "", 0, false
	}
	return id[:i], int32(k), true
}

// isItemType: t is the type of a math style's rubric item.
func isItemType(t string) bool {
	switch t {
	case schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer, schema.TypeFactual, schema.TypeProcess:
		return true
	}
	return false
}
