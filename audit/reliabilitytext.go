package audit

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/judgestats"
)

// textReliability writes the validity rates with their intervals: Wilson
// only, or corrected against people's labels.
func (r *Report) textReliability(w io.Writer) {
	rel := r.Reliability
	if rel == nil {
		return
	}
	rows := append(slices.Clone(rel.ByType), rel.Overall)
	if rel.Sheet == "" {
		heading(w, "Validity with 95%% intervals (Wilson; the judge's own errors are not corrected: see --human)")
		t := newTable("type", "judged", "valid", "rate", "95% interval")
		for _, tr := range rows {
			t.add(tr.Type, num(tr.Judged), num(tr.Valid), pct(tr.Rate), tr.RateInterval())
		}
		t.write(w)
		return
	}
	textCorrected(w, rel, rows)
}

// textCorrected writes the rates corrected against people's sheet: the
// judge against people, the rates, and the notes that explain them.
func textCorrected(w io.Writer, rel *Reliability, rows []TypeReliability) {
	heading(w, "Validity corrected for the judge's errors against people, with 95%% intervals")
	if rel.Labels == "review" {
		indented(w, "people's labels from the review logs ("+string(rel.Sheet)+"): "+rel.ReviewNote())
	} else {
		fmt.Fprintln(w, clip("  sheet: "+string(rel.Sheet)))
	}
	indented(w, rel.LabelsSummary())
	fmt.Fprintln(w)
	t := newTable("type", "labelled", "sensitivity", "specificity")
	for _, tr := range rows {
		t.add(tr.Type, num(*tr.Labelled), tr.SensitivityText(), tr.SpecificityText())
	}
	t.write(w)
	fmt.Fprintln(w)
	t = newTable("type", "judged", "judge's rate", "95% interval", "corrected", "95% interval")
	for _, tr := range rows {
		t.add(tr.Type, num(tr.Judged), pct(tr.Rate), tr.RateInterval(), pct(tr.Corrected), tr.CorrectedInterval())
	}
	t.write(w)
	fmt.Fprintln(w)
	for _, tr := range rows {
		if note := tr.Note(); note != "" {
			indented(w, tr.Type+": "+note)
		}
	}
	indented(w, "sensitivity: of the items people called valid, the share the judge called valid; specificity: "+
		"of those people called invalid, the share the judge called invalid. corrected = (judge's rate + "+
		"specificity - 1) / (sensitivity + specificity - 1) (Rogan-Gladen); its interval counts the corpus "+
		"and the people's sample (docs/judge-reliability.md).")
}

// Note says why a type has no corrected rate, or what is special about
// the one it has; "" when nothing is.
func (tr TypeReliability) Note() string {
	switch {
	case tr.Undefined != "":
		return "no corrected rate: " + judgestats.Undefined(tr.Undefined).Explain()
	case tr.Wide != nil && *tr.Wide:
		return "too few labels to tell the judge from chance: the interval is all of 0-100%"
	case tr.Clipped != nil && *tr.Clipped && *tr.Corrected == 1:
		return fmt.Sprintf("the judge's rate %s is above its sensitivity %s, the most it would report if every item were valid; "+
			"the estimate is clipped to 100%%", pct(tr.Rate), pct(tr.Sensitivity))
	case tr.Clipped != nil && *tr.Clipped:
		return fmt.Sprintf("the judge's rate %s is below 100%% - specificity %s, the least it would report if no item were valid; "+
			"the estimate is clipped to 0%%", pct(tr.Rate), pct(tr.Specificity))
	}
	return ""
}

// ReviewNote says what review decisions count as labels, and why they
// may not be a fair sample.
func (r *Reliability) ReviewNote() string {
	disputed := 0
	if r.Disputed != nil {
		disputed = *r.Disputed
	}
	return fmt.Sprintf("a reviewer's accept counts as valid, a reject or an edit as not valid as written; %d item(s) reviewers decided "+
		"differently are left out. The page puts likely-wrong items first: unless the review covered a random sample "+
		"(validate review --sample) or the whole corpus, the items people labelled lean to those and the corrected rates with them.", disputed)
}

// LabelsSummary says what became of people's labels: a sheet's rows, or
// the review's decisions.
func (r *Reliability) LabelsSummary() string {
	s := r.Rows
	if r.Labels != "review" {
		return s.Summary()
	}
	return fmt.Sprintf("%s decisions: %s not in the corpus, %s made on other text than the corpus has now, %s not judged in the corpus",
		num(int64(s.Rows)), num(int64(s.Missing)), num(int64(s.Changed)), num(int64(s.StoredUnjudged)))
}

// Summary says what became of a sheet's rows.
func (s *SheetInfo) Summary() string {
	return fmt.Sprintf("%s rows: %s left blank, %s not in the corpus, %s changed since sampling, %s not judged in the corpus",
		num(int64(s.Rows)), num(int64(s.Blank)), num(int64(s.Missing)), num(int64(s.Changed)), num(int64(s.StoredUnjudged)))
}

// SensitivityText is "90.0% (9/10)": the share and its counts; "-" without.
func (tr TypeReliability) SensitivityText() string {
	if tr.Table == nil {
		return "-"
	}
	return pctCount(tr.Sensitivity, tr.Table.ValidValid, tr.Table.PeopleValid())
}

// SpecificityText is SensitivityText's counterpart.
func (tr TypeReliability) SpecificityText() string {
	if tr.Table == nil {
		return "-"
	}
	return pctCount(tr.Specificity, tr.Table.InvalidInvalid, tr.Table.PeopleInvalid())
}

// RateInterval is the judge's rate's interval as text.
func (tr TypeReliability) RateInterval() string { return intervalText(tr.RateCI) }

// CorrectedInterval is the corrected rate's interval as text.
func (tr TypeReliability) CorrectedInterval() string { return intervalText(tr.CorrectedCI) }

// intervalText writes an interval as "89.5-97.8%"; "-" for nil.
func intervalText(iv *judgestats.Interval) string {
	if iv == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f-%.1f%%", 100*iv.Low, 100*iv.High)
}

// pctCount writes a share with its counts: "90.0% (9/10)"; "-" for nil.
func pctCount(r *float64, k, n int64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%s (%s/%s)", pct(r), num(k), num(n))
}

//go:embed reliability.html.tmpl
var reliabilityHTML string

// Chart draws the rates as points with 95% error bars, one row per type:
// the judge's rate (grey, Wilson) and, with a sheet, the corrected rate
// (green). The axis starts at the lowest bound rounded down to 10%.
func (r *Reliability) Chart() template.HTML {
	rows := append(slices.Clone(r.ByType), r.Overall)
	lo := 1.0
	for _, tr := range rows {
		for _, iv := range []*judgestats.Interval{tr.RateCI, tr.CorrectedCI} {
			if iv != nil {
				lo = min(lo, iv.Low)
			}
		}
	}
	lo, ticks := rateAxis(lo)
	const rowH, labelW, rightW = 34, 84, 24
	height := padT + rowH*len(rows) + 70
	plotW := float64(chartW - labelW - rightW)
	x := func(v float64) float64 { return float64(labelW) + plotW*(v-lo)/(1-lo) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="Validity with 95%% intervals">`,
		chartW, height, chartW, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" class="t">Validity with 95%% intervals</text>`, labelW)
	bottom := padT + rowH*len(rows)
	for _, v := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="g"/><text x="%.1f" y="%d" class="x">%.0f%%</text>`,
			x(v), padT, x(v), bottom, x(v), bottom+14, 100*v)
	}
	clipped := false
	for i, tr := range rows {
		y := padT + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="l">%s</text>`, labelW-8, y+rowH/2+4, esc(tr.Type))
		if r.Sheet == "" {
			errorBar(&b, x, float64(y+rowH/2), tr.Rate, tr.RateCI, barColor("judge"), tr.Type+": the judge's rate")
			continue
		}
		errorBar(&b, x, float64(y+rowH/3), tr.Rate, tr.RateCI, barColor("judge"), tr.Type+": the judge's rate")
		if tr.Clipped != nil && *tr.Clipped {
			clipped = true
			clippedBar(&b, x, float64(y+2*rowH/3), tr, barColor("corr"))
		} else {
			errorBar(&b, x, float64(y+2*rowH/3), tr.Corrected, tr.CorrectedCI, barColor("corr"), tr.Type+": corrected for the judge's errors")
		}
		if tr.Corrected == nil {
			fmt.Fprintf(&b, `<text x="%d" y="%d" class="k" style="fill:#777"><title>%s</title>no corrected rate</text>`, labelW+4, y+2*rowH/3+4, esc(tr.Note()))
		}
	}
	ly := bottom + 38
	keys := []struct{ class, name string }{{"judge", "the judge's rate (Wilson interval)"}}
	if r.Sheet != "" {
		keys = append(keys, struct{ class, name string }{"corr", "corrected against people"})
	}
	for i, k := range keys {
		kx := labelW + i*230
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d" class="k">%s</text>`, kx+6, ly-4, barColor(k.class), kx+16, ly, k.name)
	}
	if clipped {
		fmt.Fprintf(&b, `<path class="clipped" d="%s" fill="#ffffff" stroke="%s" stroke-width="2"/><text x="%d" y="%d" class="k">an estimate past 0-100%%, clipped to the edge (see the note)</text>`,
			arrowPath(float64(labelW+6), float64(ly+14), 1), barColor("corr"), labelW+16, ly+18)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// errorBar draws a point at rate with a bar over iv at height y, in
// color; nothing when either is missing.
func errorBar(b *strings.Builder, x func(float64) float64, y float64, rate *float64, iv *judgestats.Interval, color, what string) {
	if rate == nil || iv == nil {
		return
	}
	title := fmt.Sprintf("%s %s, 95%% interval %s", what, pct(rate), intervalText(iv))
	fmt.Fprintf(b, `<g stroke="%s" fill="%s" stroke-width="2"><title>%s</title>`, color, color, esc(title))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x(iv.Low), y, x(iv.High), y)
	for _, e := range []float64{iv.Low, iv.High} {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x(e), y-5, x(e), y+5)
	}
	fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4"/></g>`, x(*rate), y)
}

// clippedBar draws a corrected rate that fell outside [0, 1] and was
// clipped to its edge: its interval as errorBar does, and at the edge an
// open arrowhead pointing out of the axis with the word "clipped", not a
// dot that would read as an estimate of exactly 0% or 100%.
func clippedBar(b *strings.Builder, x func(float64) float64, y float64, tr TypeReliability, color string) {
	if tr.Corrected == nil || tr.CorrectedCI == nil {
		return
	}
	dir, side, anchor := 1.0, -10.0, "end"
	if *tr.Corrected <= 0 {
		dir, side, anchor = -1, 10, "start"
	}
	title := fmt.Sprintf("%s: corrected for the judge's errors: the estimate falls %s and is clipped to %s; 95%% interval %s (%s)",
		tr.Type, map[bool]string{true: "above 100%", false: "below 0%"}[dir > 0], pct(tr.Corrected), intervalText(tr.CorrectedCI), tr.Note())
	fmt.Fprintf(b, `<g stroke="%s" fill="%s" stroke-width="2"><title>%s</title>`, color, color, esc(title))
	iv := tr.CorrectedCI
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x(iv.Low), y, x(iv.High), y)
	for _, e := range []float64{iv.Low, iv.High} {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x(e), y-5, x(e), y+5)
	}
	fmt.Fprintf(b, `<path class="clipped" d="%s" fill="#ffffff"/></g>`, arrowPath(x(*tr.Corrected), y, dir))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" class="k" text-anchor="%s">clipped</text>`, x(*tr.Corrected)+side, y+14, anchor)
}

// arrowPath is an arrowhead at (x, y) pointing right (dir 1) or left (-1).
func arrowPath(x, y, dir float64) string {
	return fmt.Sprintf("M%.1f %.1f L%.1f %.1f L%.1f %.1f Z", x-6*dir, y-6, x+2*dir, y, x-6*dir, y+6)
}

// barColor is the colour of the judge's rates ("judge", grey) and the
// corrected ones ("corr", green).
func barColor(class string) string {
	if class == "corr" {
		return "#2e7d4f"
	}
	return "#8c8c8c"
}
