package audit

import (
	"context"

	"github.com/rubricforge/rubricforge/judgestats"
)

// Reliability is the validity rates with 95% intervals, by item type (null
// in a report whose validity is null): the judge's raw rate with a Wilson
// interval and, when people labelled a sample of items (validate --human),
// the judge's sensitivity and specificity against them and the rate
// corrected for the judge's errors (judgestats: Rogan-Gladen,
// delta-method interval). Verdicts names whose verdicts are measured:
// "stored", the corpus's judge's, which are the panel's in records judged
// by a panel (each judge's sensitivity and specificity against the same
// sheet are in JudgePanel).
type Reliability struct {
	Verdicts string            `json:"verdicts"`
	Method   string            `json:"method"` // "wilson" without a sheet, "rogan-gladen" with one
	Level    float64           `json:"level"`  // 0.95
	Sheet    NullString        `json:"sheet"`  // the annotation sheet's path; null without one
	Rows     *SheetInfo        `json:"sheet_rows"`
	ByType   []TypeReliability `json:"by_type"`
	Overall  TypeReliability   `json:"overall"`
}

// TypeReliability is one item type's rates. Without a sheet every field
// from Labelled on is null; with one, a corrected rate that cannot be
// estimated is null and Undefined says why (judgestats.Undefined).
type TypeReliability struct {
	Type        string               `json:"type"`
	Judged      int64                `json:"judged"`
	Valid       int64                `json:"valid"`
	Rate        *float64             `json:"rate"`          // the judge's: valid / judged
	RateCI      *judgestats.Interval `json:"rate_interval"` // Wilson
	Labelled    *int64               `json:"labelled"`      // items with both verdicts on the sheet
	Table       *judgestats.Table    `json:"confusion"`
	Sensitivity *float64             `json:"sensitivity"`
	Specificity *float64             `json:"specificity"`
	Corrected   *float64             `json:"corrected_rate"`
	CorrectedCI *judgestats.Interval `json:"corrected_interval"`
	Clipped     *bool                `json:"corrected_clipped"` // the estimate fell outside [0, 1]
	Wide        *bool                `json:"corrected_wide"`    // the sample cannot tell the judge from chance: [0, 1]
	Undefined   NullString           `json:"undefined"`
}

// reliability computes the section from the validity counts and, when
// opt.HumanSheet names a sheet, its verdicts matched with the stored ones.
// Problems reading the corpus again are the audit's own, already listed.
// The sheet's matched rows come back too (nil without a sheet).
func reliability(ctx context.Context, in *Input, v *Validity, opt Options) (*Reliability, []ComparedItem, error) {
	rel := &Reliability{Verdicts: "stored", Method: "wilson", Level: 0.95, ByType: []TypeReliability{}}
	tableOf := func(string) *judgestats.Table { return nil } // no sheet
	var all *judgestats.Table
	var pairs []ComparedItem
	if opt.HumanSheet != "" {
		matched, sh, err := matchSheet(ctx, in, opt.Human, func(Problem) {})
		if err != nil {
			return nil, nil, err
		}
		pairs = matched
		rel.Method, rel.Sheet, rel.Rows = "rogan-gladen", NullString(opt.HumanSheet), sh
		var byType map[string]*judgestats.Table
		byType, all = peopleTables(pairs)
		tableOf = func(typ string) *judgestats.Table {
			if t := byType[typ]; t != nil {
				return t
			}
			return &judgestats.Table{} // people labelled none of the type
		}
	}
	for _, tv := range v.ByType {
		rel.ByType = append(rel.ByType, typeReliability(tv, tableOf(tv.Type)))
	}
	rel.Overall = typeReliability(v.Overall, all)
	return rel, pairs, nil
}

// peopleTables counts the stored verdicts against people's, by type and
// in all.
func peopleTables(pairs []ComparedItem) (byType map[string]*judgestats.Table, all *judgestats.Table) {
	byType, all = map[string]*judgestats.Table{}, &judgestats.Table{}
	for _, p := range pairs {
		typ := byType[p.Type]
		if typ == nil {
			typ = &judgestats.Table{}
			byType[p.Type] = typ
		}
		typ.Add(p.Other, p.Stored)
		all.Add(p.Other, p.Stored)
	}
	return byType, all
}

// typeReliability is the rates of one type; t is the judge's table
// against people on its items, nil without a sheet.
func typeReliability(tv TypeValidity, t *judgestats.Table) TypeReliability {
	judged := tv.Valid + tv.Invalid
	tr := TypeReliability{Type: tv.Type, Judged: judged, Valid: tv.Valid, Rate: ratio(tv.Valid, judged)}
	if iv, ok := judgestats.Wilson(tv.Valid, judged, judgestats.Z95); ok {
		tr.RateCI = &iv
	}
	if t == nil {
		return tr
	}
	tr.Table, tr.Labelled = t, addr(t.Labelled())
	if se, ok := t.Sensitivity(); ok {
		tr.Sensitivity = &se
	}
	if sp, ok := t.Specificity(); ok {
		tr.Specificity = &sp
	}
	c, why := judgestats.Correct(tv.Valid, judged, *t, judgestats.Z95)
	if why != "" {
		tr.Undefined = NullString(why)
		return tr
	}
	tr.Corrected, tr.CorrectedCI, tr.Clipped, tr.Wide = &c.Rate, &c.CI, &c.Clipped, &c.Wide
	return tr
}

// NothingCompared says, when a sheet was given but none of its rows could
// be compared with a stored verdict, why not; "" otherwise.
func (r *Reliability) NothingCompared() string {
	if r == nil || r.Rows == nil || r.Overall.Labelled == nil || *r.Overall.Labelled > 0 {
		return ""
	}
	return "no item of the sheet was compared: " + r.Rows.whyNothing()
}

// correctedLowerBound is the lower end of the overall corrected rate's
// 95% interval; ok is false, with the reason in words, when the corrected
// rate is undefined.
func (r *Reliability) correctedLowerBound() (low float64, what string, ok bool) {
	if o := r.Overall; o.CorrectedCI != nil {
		return o.CorrectedCI.Low, "the lower bound of the corrected validity rate's 95% interval", true
	}
	return 0, "the corrected validity rate is undefined: " + judgestats.Undefined(r.Overall.Undefined).Explain(), false
}
