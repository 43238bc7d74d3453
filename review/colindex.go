package review

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
)

// The index of a Parquet file of records is read column by column: only
// the small columns an index entry needs (indexRow's), value by value,
// assembled into one reused indexRow per record from the values'
// repetition and definition levels. Decoding whole rows through
// reflection cost most of a large corpus's start. A file this cannot read
// (another schema, damage) is read again the slow way, which reports what
// is wrong with it.

// Paths of the columns the index reads.
var (
	colID          = []string{"id"}
	colFingerprint = []string{"provenance", "job_fingerprint"}
	colItemID      = []string{"rubric", "list", "element", "id"}
	colItemType    = []string{"rubric", "list", "element", "type"}
	colPolarity    = []string{"rubric", "list", "element", "polarity"}
	colValid       = []string{"rubric", "list", "element", "valid"}
	colEmpirical   = []string{"rubric", "list", "element", "empirical_valid"}
	colCorrect     = []string{"rollouts", "list", "element", "correct"}
	colSatItem     = []string{"rollouts", "list", "element", "satisfaction", "list", "element", "item_id"}
	colSatisfied   = []string{"rollouts", "list", "element", "satisfaction", "list", "element", "satisfied"}
	colQuestion    = []string{"grounded", "questions", "list", "element", "index"}
	colCritValid   = []string{"grounded", "questions", "list", "element", "criteria", "list", "element", "valid"}
	colCritVaries  = []string{"grounded", "questions", "list", "element", "criteria", "list", "element", "varies"}
)

// Depths (names of the path up to and including a list's "list") at
// which a list's element is present.
const (
	atRubricItem = 2 // rubric, list
	atRollout    = 2 // rollouts, list
	atSatisfied  = 5 // rollouts, list, element, satisfaction, list
	atGrounded   = 1 // grounded
	atQuestion   = 3 // grounded, questions, list
	atCriterion  = 6 // grounded, questions, list, element, criteria, list
)

// column is one column read, with its current row's values.
type column struct {
	c    *corpus.Column
	vals []parquet.Value
}

// next reads the column's next row.
func (col *column) next() error {
	var err error
	col.vals, err = col.c.Row(col.vals[:0])
	return err
}

// at reports whether v is present to depth k of the column's path.
func (col *column) at(v parquet.Value, k int) bool { return v.DefinitionLevel() >= col.c.Defined(k) }

// colReader reads a file's index entries column by column.
type colReader struct {
	id, fp                                   column
	itemID, itemType, polarity, valid, empir column
	correct, satItem, satisfied              column
	question, critValid, critVaries          column
	grounded                                 bool // the file has the grounded columns
	row                                      indexRow
	questions                                indexGrounded
	lastFP                                   string // the job fingerprint of the row before
	scratch                                  edgeScratch
}

// scanColumns reads the index entries of Parquet file i of in to fn, as
// ScanFileAt would (RowRef.At is the row's index); ok is false when the
// file is not one to read by columns (JSONL, a verl export).
func scanColumns(ctx context.Context, in *audit.Input, i int, fn func(*indexRow, audit.RowRef)) (ok bool, err error) {
	defer func() {
		if p := recover(); p != nil { // a column of another type than the schema's, in a damaged file
			err = fmt.Errorf("%s is damaged: reading its columns panicked: %v", in.Files[i].Path, p)
		}
	}()
	cf, ok, err := in.Columns(i)
	if !ok || err != nil {
		return ok, err
	}
	defer func() { _ = cf.Close() }() // only read: closing loses nothing
	r := &colReader{grounded: cf.HasField("grounded")}
	cols := r.columns()
	for _, c := range cols {
		if c.path == nil {
			continue
		}
		if c.col.c, err = cf.Column(c.path...); err != nil {
			return true, err
		}
		defer func() { _ = c.col.c.Close() }() // only read
	}
	for at := int64(0); ; at++ {
		if at%1024 == 0 && ctx.Err() != nil {
			return true, ctx.Err()
		}
		err := r.next(cols)
		if errors.Is(err, io.EOF) {
			if at != cf.Rows() {
				return true, fmt.Errorf("shard %s: read %d rows by columns, the footer says %d", in.Files[i].Path, at, cf.Rows())
			}
			return true, nil
		}
		if err != nil {
			return true, fmt.Errorf("%s row %d: %w", in.Files[i].Path, at+1, err)
		}
		fn(&r.row, audit.RowRef{File: int32(i), At: at})
	}
}

// namedColumn is a column of colReader and its path (nil: not read).
type namedColumn struct {
	col  *column
	path []string
}

func (r *colReader) columns() []namedColumn {
	cols := []namedColumn{{&r.id, colID}, {&r.fp, colFingerprint}, {&r.itemID, colItemID}, {&r.itemType, colItemType},
		{&r.polarity, colPolarity}, {&r.valid, colValid}, {&r.empir, colEmpirical}, {&r.correct, colCorrect},
		{&r.satItem, colSatItem}, {&r.satisfied, colSatisfied}}
	if r.grounded {
		cols = append(cols, namedColumn{&r.question, colQuestion}, namedColumn{&r.critValid, colCritValid}, namedColumn{&r.critVaries, colCritVaries})
	}
	return cols
}

// next reads every column's next row and assembles r.row; io.EOF after
// the last row.
func (r *colReader) next(cols []namedColumn) error {
	eof := 0
	for _, c := range cols {
		err := c.col.next()
		switch {
		case errors.Is(err, io.EOF):
			eof++
		case err != nil:
			return err
		}
	}
	switch eof {
	case 0:
	case len(cols):
		return io.EOF
	default:
		return errors.New("the columns hold different numbers of rows")
	}
	if len(r.id.vals) != 1 || len(r.fp.vals) != 1 {
		return errors.New("the id or job fingerprint column repeats")
	}
	r.row = indexRow{ID: string(r.id.vals[0].ByteArray()), Rubric: r.row.Rubric[:0], Rollouts: r.row.Rollouts[:0], scratch: &r.scratch}
	r.row.Provenance.JobFingerprint = r.fpString(r.fp.vals[0].ByteArray())
	if err := r.rubric(); err != nil {
		return err
	}
	if err := r.rollouts(); err != nil {
		return err
	}
	return r.groundedRow()
}

// fpString is the job fingerprint b names, allocated once for a run of
// records with the same one (nearly always).
func (r *colReader) fpString(b []byte) string {
	if string(b) != r.lastFP {
		r.lastFP = string(b)
	}
	return r.lastFP
}

// rubric assembles the row's rubric items.
func (r *colReader) rubric() error {
	n := len(r.itemID.vals)
	for _, c := range []*column{&r.itemType, &r.polarity, &r.valid, &r.empir} {
		if len(c.vals) != n {
			return errors.New("the rubric's columns disagree on its items")
		}
	}
	for k := range n {
		v := r.itemID.vals[k]
		if !r.itemID.at(v, atRubricItem) {
			continue // an empty rubric
		}
		r.row.Rubric = append(r.row.Rubric, indexItem{ID: v.Int32(), Type: itemTypeName(r.itemType.vals[k].ByteArray()),
			Polarity: r.polarity.vals[k].Int32(), Valid: r.optBool(&r.valid, k, len(colValid)),
			EmpiricalValid: r.optBool(&r.empir, k, len(colEmpirical))})
	}
	return nil
}

// optBool is the optional boolean value k of c: nil when null.
func (r *colReader) optBool(c *column, k, depth int) *bool {
	v := c.vals[k]
	if !c.at(v, depth) {
		return nil
	}
	if v.Boolean() {
		return &boolTrue
	}
	return &boolFalse
}

// boolTrue and boolFalse are what an index row's optional verdicts point
// at (entryOf only reads them).
var boolTrue, boolFalse = true, false

// itemTypeName is the item type b names, without allocating for the
// known ones.
func itemTypeName(b []byte) string {
	for _, t := range itemTypes {
		if string(b) == t {
			return t
		}
	}
	return string(b)
}

// rollouts assembles the row's rollouts and their satisfaction verdicts.
func (r *colReader) rollouts() error {
	for _, v := range r.correct.vals {
		if !r.correct.at(v, atRollout) {
			continue
		}
		n := len(r.row.Rollouts)
		if n < cap(r.row.Rollouts) {
			r.row.Rollouts = r.row.Rollouts[:n+1]
			r.row.Rollouts[n].Satisfaction = r.row.Rollouts[n].Satisfaction[:0]
		} else {
			r.row.Rollouts = append(r.row.Rollouts, indexRollout{})
		}
		r.row.Rollouts[n].Correct = v.Boolean()
	}
	if len(r.satisfied.vals) != len(r.satItem.vals) {
		return errors.New("the satisfaction columns disagree")
	}
	ro := -1
	for k, v := range r.satItem.vals {
		if !r.satItem.at(v, atRollout) {
			continue
		}
		if v.RepetitionLevel() <= 1 {
			ro++
		}
		if ro >= len(r.row.Rollouts) {
			return errors.New("the satisfaction column names more rollouts than the rollouts column")
		}
		if !r.satItem.at(v, atSatisfied) {
			continue // a rollout with no verdicts
		}
		r.row.Rollouts[ro].Satisfaction = append(r.row.Rollouts[ro].Satisfaction,
			schemaSatisfaction{ID: v.Int32(), Satisfied: r.satisfied.vals[k].Boolean()})
	}
	if ro+1 != len(r.row.Rollouts) {
		return errors.New("the satisfaction column names fewer rollouts than the rollouts column")
	}
	return nil
}

// groundedRow assembles the row's grounded questions' criteria verdicts.
func (r *colReader) groundedRow() error {
	if !r.grounded || len(r.question.vals) == 0 || !r.question.at(r.question.vals[0], atGrounded) {
		return nil
	}
	g := &r.questions
	g.Questions = g.Questions[:0]
	for _, v := range r.question.vals {
		if !r.question.at(v, atQuestion) {
			continue
		}
		n := len(g.Questions)
		if n < cap(g.Questions) {
			g.Questions = g.Questions[:n+1]
			g.Questions[n].Criteria = g.Questions[n].Criteria[:0]
		} else {
			g.Questions = append(g.Questions, indexQuestion{})
		}
		g.Questions[n].Index = v.Int32()
	}
	if len(r.critVaries.vals) != len(r.critValid.vals) {
		return errors.New("the criteria columns disagree")
	}
	q := -1
	for k, v := range r.critValid.vals {
		if !r.critValid.at(v, atQuestion) {
			continue
		}
		if v.RepetitionLevel() <= 1 {
			q++
		}
		if q >= len(g.Questions) {
			return errors.New("the criteria columns name more questions than the questions column")
		}
		if !r.critValid.at(v, atCriterion) {
			continue // a question with no criteria
		}
		g.Questions[q].Criteria = append(g.Questions[q].Criteria, indexCriterion{Valid: r.optBool(&r.critValid, k, len(colCritValid)),
			Varies: r.optBool(&r.critVaries, k, len(colCritVaries))})
	}
	if q+1 != len(g.Questions) {
		return errors.New("the criteria columns name fewer questions than the questions column")
	}
	r.row.Grounded = g
	return nil
}
