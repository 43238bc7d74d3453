package audit

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Columns of an annotation sheet. People fill in human_valid (and may
// write a note); the other columns say what to judge.
var sheetColumns = []string{"sample", "record_id", "item_id", "type", "item", "problem", "ground_truth", "human_valid", "human_note"}

// WriteSheet writes items as a CSV annotation sheet (RFC 4180, UTF-8, one
// header row). The stored verdicts are left out so that annotators judge
// blind. A cell that a spreadsheet would take for a formula is written with
// a leading quote (see escapeCell); ReadSheet takes it off again.
func WriteSheet(w io.Writer, items []SampleItem) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(sheetColumns); err != nil {
		return fmt.Errorf("writing annotation sheet: %w", err)
	}
	for i, it := range items {
		row := []string{strconv.Itoa(i + 1), it.RecordID, strconv.Itoa(int(it.ItemID)), it.Type, it.Text, it.Problem, it.Answer, "", ""}
		for c := range row {
			row[c] = escapeCell(row[c])
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("writing annotation sheet: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing annotation sheet: %w", err)
	}
	return nil
}

// formulaStart holds the first characters that make a spreadsheet (Excel,
// LibreOffice, Google Sheets) read a cell as a formula: a problem "-3x = 6"
// or an item "=HYPERLINK(...)" would be evaluated when the sheet is opened.
const formulaStart = "=+-@\t\r"

// escapeCell prefixes a cell that starts like a formula with a single
// quote, which spreadsheets show as text and do not display. Quotes already
// in front of a formula character get one more, so that unescapeCell gives
// every cell back unchanged.
func escapeCell(s string) string {
	if looksLikeFormula(s) {
		return "'" + s
	}
	return s
}

// looksLikeFormula: s starts with a formula character, after any quotes.
func looksLikeFormula(s string) bool {
	s = strings.TrimLeft(s, "'")
	return s != "" && strings.IndexByte(formulaStart, s[0]) >= 0
}

// unescapeCell undoes escapeCell.
func unescapeCell(s string) string {
	if strings.HasPrefix(s, "'") && looksLikeFormula(s) {
		return s[1:]
	}
	return s
}

// Annotation is one row of a filled-in sheet.
type Annotation struct {
	Line     int // in the file, from 1
	RecordID string
	ItemID   int32
	Text     string // the item text as sampled; empty when the sheet has no item column
	Verdict  *bool  // nil: left blank
}

// ErrSheet marks a malformed annotation sheet.
var ErrSheet = errors.New("malformed annotation sheet")

// ReadSheet reads a filled-in annotation sheet. Columns are found by their
// header names, in any order; record_id, item_id and human_valid are
// required. A verdict is valid/invalid, yes/no, true/false, 1/0 or y/n in
// any case, or blank. Errors wrap ErrSheet and name the file, line and
// column.
func ReadSheet(r io.Reader, name string) ([]Annotation, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, sheetErr(name, 1, "", "reading the header row: %v", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	for _, need := range []string{"record_id", "item_id", "human_valid"} {
		if _, ok := col[need]; !ok {
			return nil, sheetErr(name, 1, "", "no %q column; the header has %q", need, head)
		}
	}
	var out []Annotation
	seen := map[[2]string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			line := 0
			if pe, ok := errors.AsType[*csv.ParseError](err); ok {
				line, err = pe.Line, pe.Err
			}
			return nil, sheetErr(name, line, "", "%v", err)
		}
		line, _ := cr.FieldPos(0)
		a, err := parseAnnotation(rec, col, name, line)
		if err != nil {
			return nil, err
		}
		if a.RecordID == "" && a.ItemID == 0 && a.Verdict == nil {
			continue // a blank row
		}
		k := [2]string{a.RecordID, strconv.Itoa(int(a.ItemID))}
		if first, dup := seen[k]; dup {
			return nil, sheetErr(name, line, "", "record %s item %d is annotated again (first on line %d)", a.RecordID, a.ItemID, first)
		}
		seen[k] = line
		out = append(out, a)
	}
}

func parseAnnotation(rec []string, col map[string]int, name string, line int) (Annotation, error) {
	get := func(c string) string {
		if i, ok := col[c]; ok && i < len(rec) {
			return strings.TrimSpace(unescapeCell(rec[i]))
		}
		return ""
	}
	a := Annotation{Line: line, RecordID: get("record_id"), Text: get("item")}
	if s := get("item_id"); s != "" {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil || id < 1 {
			return a, sheetErr(name, line, "item_id", "%q is not an item id", s)
		}
		a.ItemID = int32(id)
	}
	v, err := parseVerdict(get("human_valid"))
	if err != nil {
		return a, sheetErr(name, line, "human_valid", "%v", err)
	}
	a.Verdict = v
	if (a.RecordID == "") != (a.ItemID == 0) || (a.RecordID == "" && v != nil) {
		return a, sheetErr(name, line, "", "a row needs both record_id and item_id")
	}
	return a, nil
}

func parseVerdict(s string) (*bool, error) {
	t, f := true, false
	switch strings.ToLower(s) {
	case "":
		return nil, nil
	case "valid", "yes", "y", "true", "1":
		return &t, nil
	case "invalid", "no", "n", "false", "0":
		return &f, nil
	}
	return nil, fmt.Errorf("%q is not a verdict; write valid or invalid (yes/no, true/false, 1/0), or leave it blank", s)
}

func sheetErr(name string, line int, column, format string, args ...any) error {
	where := fmt.Sprintf("%s line %d", name, line)
	if column != "" {
		where += ", column " + column
	}
	return fmt.Errorf("%s: %s: %w", where, fmt.Sprintf(format, args...), ErrSheet)
}

// HumanAgreement compares people's verdicts with the stored ones. Rows
// whose item is no longer in the corpus, or whose text changed since the
// sheet was written, are counted and left out.
func HumanAgreement(ctx context.Context, in *Input, anns []Annotation, sheet string) (*AgreementReport, error) {
	rep := NewAgreementReport(in, "people ("+sheet+")")
	pairs, sh, err := matchSheet(ctx, in, anns, rep.problem)
	if err != nil {
		return nil, err
	}
	rep.Sheet = sh
	rep.finish(pairs)
	return rep, nil
}

// matchSheet finds the annotated items in the corpus and pairs each
// person's verdict (Other) with the stored one (Stored). Rows left blank,
// rows whose item is not in the corpus, has another text or has no stored
// verdict are counted in the SheetInfo and left out. Unreadable input goes
// to problem; the error is only the context's.
func matchSheet(ctx context.Context, in *Input, anns []Annotation, problem func(Problem)) ([]ComparedItem, *SheetInfo, error) {
	want := map[[2]string]*Annotation{}
	for i := range anns {
		want[[2]string{anns[i].RecordID, strconv.Itoa(int(anns[i].ItemID))}] = &anns[i]
	}
	sh := &SheetInfo{Rows: len(anns)}
	found := map[*Annotation]judgedItem{}
	for _, f := range in.Files {
		_, err := scanFile(f, in.Format, judgedOfLabel, func(r *judgedRow, _ int64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			for _, it := range r.Rubric {
				if a := want[[2]string{r.ID, strconv.Itoa(int(it.ID))}]; a != nil {
					if _, dup := found[a]; !dup {
						found[a] = it
					}
				}
			}
			return nil
		}, problem)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			problem(Problem{File: f.Path, Error: err.Error()})
		}
	}
	var pairs []ComparedItem
	for i := range anns {
		a := &anns[i]
		it, ok := found[a]
		switch {
		case a.Verdict == nil:
			sh.Blank++
		case !ok:
			sh.Missing++
		case a.Text != "" && !sameText(a.Text, it.Text):
			sh.Changed++
		case it.Valid == nil:
			sh.StoredUnjudged++
		default:
			pairs = append(pairs, ComparedItem{RecordID: a.RecordID, ItemID: a.ItemID, Type: it.Type, Text: it.Text, Stored: *it.Valid, Other: *a.Verdict})
		}
	}
	return pairs, sh, nil
}
