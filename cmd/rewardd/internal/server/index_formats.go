package server

import (
	"fmt"
	"math"
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
