package server

import (
	"errors"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// groundedColumn is a leaf column of the grounded payload; shards written
// before the grounded style lack it.
var groundedColumn = []string{"grounded", "doc_id"}

// groundedRubricRow is rubricRow with the grounded payload, for shards that
// have the column.
type groundedRubricRow struct {
	ID       string           `parquet:"id"`
	Source   string           `parquet:"source"`
	Problem  string           `parquet:"problem"`
	Answer   string           `parquet:"answer"`
	Style    string           `parquet:"style"`
	Split    string           `parquet:"split"`
	Rubric   []schema.Item    `parquet:"rubric,list"`
	Grounded *schema.Grounded `parquet:"grounded,optional"`
}

// scanGroundedRecords reads a shard that has the grounded column: a math
// record as scanRecords does, a grounded one as its questions.
func (l *loader) scanGroundedRecords(file string) error {
	l.stats.Files++
	row := 0
	return corpus.Scan(file, func(g *groundedRubricRow) error {
		row++
		r := rubricRow{ID: g.ID, Source: g.Source, Problem: g.Problem, Answer: g.Answer, Style: g.Style, Split: g.Split, Rubric: g.Rubric, Grounded: g.Grounded}
		l.addRecord(&r, file, row)
		return nil
	})
}

// addGrounded indexes every question of a grounded record under its
// question id (schema.QuestionID) and its text. The record counts once; a
// question whose label does not check is skipped and logged.
func (l *loader) addGrounded(r *rubricRow, file string, row int) {
	if r.Grounded == nil || len(r.Grounded.Questions) == 0 {
		l.skip(file, row, errors.New("the grounded record has no questions"))
		return
	}
	rec := schema.Record{ID: r.ID, Source: r.Source, Style: r.Style, Grounded: r.Grounded}
	for _, lab := range schema.QuestionLabels(&rec) {
		if err := lab.Check(); err != nil {
			l.skip(file, row, err)
			continue
		}
		l.stats.Grounded++
		if !l.x.add(&lab, l.split(r.Split)) {
			l.stats.Duplicates++
		}
	}
}
