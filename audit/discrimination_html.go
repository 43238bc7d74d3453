package audit

import (
	"fmt"
	"html/template"
	"strings"
)

// discrimCharts draws the discrimination section's figures: the
// histograms of item edges and rubric AUROCs, and the share of items of
// each kind by type and of records with at least one.
func (r *Report) discrimCharts() []template.HTML {
	d := r.Discrimination
	if d == nil || d.Measured == 0 {
		return nil
	}
	return []template.HTML{
		rangeChart("Item edge (measured items)", "edge", "items", d.EdgeHistogram, 1, "#4c72b0"),
		rangeChart("Rubric AUROC (measured records)", "AUROC", "records", d.AUROCHistogram, 2, "#55a868"),
		kindsChart("Items of each kind, by type", append(append([]DiscrimCount{}, d.ByType...), d.Total)),
		kindsChart("Measured records with at least one item of each kind", []DiscrimCount{d.RecordsWith}),
	}
}

// kinds are the bars of kindsChart, with their colors.
var kinds = []struct {
	name, color string
	n           func(DiscrimCount) int64
}{
	{"saturated", "#dd8452", func(c DiscrimCount) int64 { return c.Saturated }},
	{"dead", "#8c8c8c", func(c DiscrimCount) int64 { return c.Dead }},
	{"anti", "#c44e52", func(c DiscrimCount) int64 { return c.Anti }},
	{"redundant", "#8172b2", func(c DiscrimCount) int64 { return c.Redundant }},
}

// kindsChart draws, for each row, one horizontal bar per kind: its count
// as a share of the row's items (records, for the records row).
func kindsChart(title string, rows []DiscrimCount) template.HTML {
	const barH, gap, labelW, valueW = 9, 10, 84, 110
	rowH := barH*len(kinds) + gap
	height := padT + rowH*len(rows) + 30
	barW := float64(chartW - labelW - valueW - padR)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		chartW, height, chartW, height, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="20" class="t">%s</text>`, labelW, esc(title))
	for i, row := range rows {
		y := padT + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="l">%s</text>`, labelW-8, y+rowH/2+2, esc(row.Type))
		for k, kind := range kinds {
			n := kind.n(row)
			w := 0.0
			if row.Items > 0 {
				w = barW * float64(n) / float64(row.Items)
			}
			by := y + k*barH
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s of %s</title></rect>`,
				labelW, by, w, barH-1, kind.color, esc(row.Type), kind.name, num(n), num(row.Items))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="k">%s (%s)</text>`, float64(labelW)+w+4, by+barH-1, num(n), pctOf(n, row.Items))
		}
	}
	ly := padT + rowH*len(rows) + 12
	for i, kind := range kinds {
		x := labelW + i*100
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" class="k">%s</text>`, x, ly-10, kind.color, x+18, ly, kind.name)
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}
