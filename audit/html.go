package audit

import (
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed report.html.tmpl
var htmlTemplate string

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":   num,
	"pct":   pct,
	"pctOf": pctOf,
	"fix":   fix,
	"f2":    f2,
	"fmtf":  formatFloat,
	"item": func(id *int32) string {
		if id == nil {
			return "-"
		}
		return strconv.Itoa(int(*id))
	},
	"time":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"list":    countList,
	"join":    func(s []string) string { return strings.Join(s, ", ") },
	"addr":    func(f float64) *float64 { return &f },
	"deref":   func(b *bool) bool { return b != nil && *b },
	"deref64": func(n *int64) int64 { return *n },
	"tail": func(path string) string { // the last two elements: shards/part-00001.parquet
		dir, file := filepath.Split(filepath.Clean(path))
		return filepath.Join(filepath.Base(dir), file)
	},
}).Parse(htmlTemplate + reliabilityHTML + panelHTML + liveStatsHTML))

// WriteHTML writes the report as one self-contained HTML page: inline CSS
// and SVG charts, no scripts, no external assets.
func (r *Report) WriteHTML(w io.Writer) error {
	data := struct {
		*Report
		Charts, DiscrimCharts []template.HTML
	}{r, r.charts(), r.discrimCharts()}
	return htmlPage.Execute(w, data)
}

// charts draws the report's figures as inline SVG.
func (r *Report) charts() []template.HTML {
	var out []template.HTML
	if g := r.Grounded; g != nil && r.Corpus.RubricKind == RubricGrounded { // its own figures lead
		out = append(out, r.groundedCharts()...)
	}
	if r.Validity != nil {
		out = append(out, validityChart(*r.Validity, "Validity by type"))
	}
	for _, sc := range r.Counts {
		labels := make([]string, len(sc.ItemsPerRecord))
		counts := make([]int64, len(sc.ItemsPerRecord))
		for i, b := range sc.ItemsPerRecord {
			labels[i], counts[i] = strconv.Itoa(b.Value), b.Records
		}
		out = append(out, histogram(fmt.Sprintf("Items per record (%s)", orQuoted(sc.Style)), "items", "records", labels, counts, "#4c72b0"))
	}
	if p := r.PassRates; p != nil && p.Records > 0 {
		out = append(out, rangeChart("Pass rate per record", "pass rate", "records", p.Histogram, 1, "#55a868"))
	}
	if ro := r.Rollouts; ro != nil && ro.Tokens != nil && ro.Tokens.Known > 0 {
		out = append(out, rangeChart("Rollout length", "completion tokens", "rollouts", ro.Tokens.Histogram, 0, "#8172b2"))
	}
	if r.Grounded != nil && r.Corpus.RubricKind == RubricBoth {
		out = append(out, r.groundedCharts()...)
	}
	return out
}

// groundedCharts draws the grounded criteria's validity by position, the
// criteria per question and, with open-book answers, the criteria's
// open/closed-book edges.
func (r *Report) groundedCharts() []template.HTML {
	g := r.Grounded
	out := []template.HTML{validityChart(Validity{ByType: g.ByPosition, Overall: g.Validity}, "Criteria validity by position")}
	if len(g.CriteriaHistogram) > 0 {
		labels := make([]string, len(g.CriteriaHistogram))
		counts := make([]int64, len(g.CriteriaHistogram))
		for i, b := range g.CriteriaHistogram {
			labels[i], counts[i] = strconv.Itoa(b.Value), b.Records
		}
		out = append(out, histogram("Criteria per question", "criteria", "questions", labels, counts, "#4c72b0"))
	}
	if e := g.OpenBookEdge; e != nil && e.Criteria > 0 {
		out = append(out, rangeChart("Criterion open/closed-book edge (measured criteria)", "edge", "criteria", e.Histogram, 1, "#dd8452"))
	}
	return out
}

const (
	chartW = 520
	chartH = 260
	padL   = 56
	padR   = 16
	padT   = 34
	padB   = 48
)

func esc(s string) string { return html.EscapeString(s) }

// histogram draws one vertical bar per label. Counts are written above
// the bars only when every one fits its bar's width (in full, else
// shortened: 12.3k); the bars' tooltips always hold them. Axis labels are
// thinned to what fits without touching.
func histogram(title, xName, yName string, labels []string, counts []int64, color string) template.HTML {
	var most int64
	for _, c := range counts {
		most = max(most, c)
	}
	top := niceCeil(float64(most))
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	var b strings.Builder
	svgOpen(&b, title)
	axes(&b, top, yName, xName)
	n := max(1, len(counts))
	slot := plotW / float64(n)
	value := valueLabels(counts, slot)
	widest := 0.0
	for _, l := range labels {
		widest = max(widest, textWidth(l, fontX))
	}
	every := max(1, int(math.Ceil(float64(n)*(widest+6)/plotW)))
	for i, c := range counts {
		h := plotH * float64(c) / top
		x := float64(padL) + float64(i)*slot
		y := float64(padT) + plotH - h
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`,
			x+slot*0.1, y, slot*0.8, h, color, esc(labels[i]), num(c))
		if value != nil && c > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="v">%s</text>`, x+slot/2, y-3, value(c))
		}
		if i%every == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="x">%s</text>`, x+slot/2, chartH-padB+14, esc(labels[i]))
		}
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// Font sizes of the chart texts, as the page's style sets them.
const (
	fontValue = 10 // counts above bars
	fontX     = 11 // x axis labels
	fontY     = 11 // y axis ticks
)

// textWidth estimates how wide s is drawn at px pixels: 0.62 em a glyph,
// a little more than the digits of common sans-serif fonts.
func textWidth(s string, px float64) float64 {
	return float64(utf8.RuneCountInString(s)) * px * 0.62
}

// valueLabels is how the counts above bars are written, or nil when not
// even the short form fits every bar's slot.
func valueLabels(counts []int64, slot float64) func(int64) string {
	for _, format := range []func(int64) string{num, short} {
		fits := true
		for _, c := range counts {
			fits = fits && textWidth(format(c), fontValue) <= slot-2
		}
		if fits {
			return format
		}
	}
	return nil
}

// short writes a count in at most five characters: 950, 12k, 2.5k, 1.2M.
func short(n int64) string {
	x := float64(n)
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1e6:
		return trimZero(x/1e3) + "k"
	default:
		return trimZero(x/1e6) + "M"
	}
}

// trimZero writes x with one decimal below 100 and none above, without a
// trailing ".0".
func trimZero(x float64) string {
	if x >= 100 {
		return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	}
	return strings.TrimSuffix(strconv.FormatFloat(math.Round(x*10)/10, 'f', 1, 64), ".0")
}

// rangeChart draws a histogram of real-valued bins labelled by their lower
// bounds.
func rangeChart(title, xName, yName string, bins []Range, decimals int, color string) template.HTML {
	labels := make([]string, len(bins))
	counts := make([]int64, len(bins))
	for i, r := range bins {
		labels[i], counts[i] = strconv.FormatFloat(r.Lo, 'f', decimals, 64), r.Count
	}
	return histogram(title, xName+" (bin start)", yName, labels, counts, color)
}

func svgOpen(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, esc(title))
	fmt.Fprintf(b, `<text x="%d" y="20" class="t">%s</text>`, padL, esc(title))
}

// axes draws the y axis from 0 to top with three ticks (short numbers:
// 2.5k), and the axis names; the y name stands left of the widest tick.
func axes(b *strings.Builder, top float64, yName, xName string) {
	plotH := float64(chartH - padT - padB)
	for k := 0; k <= 2; k++ {
		v := top * float64(k) / 2
		y := float64(padT) + plotH - plotH*float64(k)/2
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="g"/>`, padL, y, chartW-padR, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" class="y">%s</text>`, padL-6, y+4, short(int64(math.Round(v))))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" class="a" transform="rotate(-90 %d %d)">%s</text>`, yTitleX, padT+int(plotH/2), yTitleX, padT+int(plotH/2), esc(yName))
	fmt.Fprintf(b, `<text x="%d" y="%d" class="a">%s</text>`, padL+(chartW-padL-padR)/2, chartH-8, esc(xName))
}

// yTitleX is the baseline of the rotated y axis name: its glyphs reach
// about 9 px left of it and 3 px right, clear of ticks of five characters
// (padL - 6 - 34 px).
const yTitleX = 12

// niceCeil rounds x up to 1, 2 or 5 times a power of ten (at least 1), so
// that half of it is a round tick too.
func niceCeil(x float64) float64 {
	if x <= 1 {
		return 2
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	ms := []float64{1, 2, 4, 5, 6, 8, 10}
	if p == 1 {
		ms = []float64{2, 4, 6, 8, 10} // halves stay whole numbers
	}
	for _, m := range ms {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// validityChart draws one horizontal bar per item type: valid, invalid and
// unjudged items as parts of the total, with the validity rate.
func validityChart(v Validity, title string) template.HTML {
	rows := append(append([]TypeValidity{}, v.ByType...), v.Overall)
	const rowH, labelW, rateW = 30, 84, 120
	height := padT + rowH*len(rows) + 30
	barW := float64(chartW - labelW - rateW - padR)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		chartW, height, chartW, height, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="20" class="t">%s (LLM judge)</text>`, labelW, esc(title))
	for i, t := range rows {
		y := padT + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="l">%s</text>`, labelW-8, y+18, esc(t.Type))
		x := float64(labelW)
		for _, part := range []struct {
			n     int64
			class string
			name  string
		}{{t.Valid, "ok", "valid"}, {t.Invalid, "bad", "invalid"}, {t.Unjudged, "none", "unjudged"}} {
			if t.Total == 0 || part.n == 0 {
				continue
			}
			w := barW * float64(part.n) / float64(t.Total)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" class="%s"><title>%s %s: %s of %s</title></rect>`,
				x, y+4, w, rowH-10, part.class, esc(t.Type), part.name, num(part.n), num(t.Total))
			x += w
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="r">%s valid</text>`, float64(labelW)+barW+8, y+18, pct(t.Rate))
	}
	ly := padT + rowH*len(rows) + 12
	for i, l := range []struct{ class, name string }{{"ok", "valid"}, {"bad", "invalid"}, {"none", "unjudged"}} {
		x := labelW + i*110
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" class="%s"/><text x="%d" y="%d" class="k">%s</text>`, x, ly-10, l.class, x+18, ly, l.name)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}
