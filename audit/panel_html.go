package audit

import (
	_ "embed"
	"fmt"
	"html/template"
	"strings"
)

//go:embed panel.html.tmpl
var panelHTML string

// Title names the kind of verdict in the HTML page.
func (v *PanelVerdicts) Title() string { return v.kind }

// IntervalText is the rate's interval as text.
func (r RateFigure) IntervalText() string { return intervalText(r.Interval) }

// panelColors colour the panel (first) and its judges in the chart.
var panelColors = [...]string{"#222222", "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b2", "#937860"}

// Chart draws the rates with 95% error bars, one row per type, one bar for
// the panel and one per judge, so a judge whose rate sits apart from the
// others' shows.
func (v *PanelVerdicts) Chart() template.HTML {
	lo := 1.0
	for _, tr := range v.Rates {
		for _, r := range append([]RateFigure{tr.Panel}, tr.Judges...) {
			if r.Interval != nil {
				lo = min(lo, r.Interval.Low)
			}
		}
	}
	lo, ticks := rateAxis(lo)
	bars := 1
	if len(v.Rates) > 0 {
		bars += len(v.Rates[0].Judges)
	}
	const labelW, rightW, barH = 84, 24, 9
	rowH := barH*bars + 10
	height := padT + rowH*len(v.Rates) + 38 + 16*((bars+2)/3)
	plotW := float64(chartW - labelW - rightW)
	x := func(r float64) float64 { return float64(labelW) + plotW*(r-lo)/(1-lo) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		chartW, height, chartW, height, esc(v.kind+" with 95% intervals"))
	fmt.Fprintf(&b, `<text x="%d" y="20" class="t">%s</text>`, labelW, esc(v.kind+": rates with 95% intervals"))
	bottom := padT + rowH*len(v.Rates)
	for _, r := range ticks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="g"/><text x="%.1f" y="%d" class="x">%.0f%%</text>`,
			x(r), padT, x(r), bottom, x(r), bottom+14, 100*r)
	}
	for i, tr := range v.Rates {
		y := padT + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="l">%s</text>`, labelW-8, y+rowH/2+4, esc(tr.Type))
		for k, r := range append([]RateFigure{tr.Panel}, tr.Judges...) {
			errorBar(&b, x, float64(y+5+k*barH+barH/2), r.Rate, r.Interval, panelColors[k%len(panelColors)], tr.Type+": "+r.Judge)
		}
	}
	if len(v.Rates) > 0 {
		for k, r := range append([]RateFigure{v.Rates[0].Panel}, v.Rates[0].Judges...) {
			kx, ky := labelW+(k%3)*150, bottom+38+16*(k/3)
			fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d" class="k">%s</text>`,
				kx+6, ky-4, panelColors[k%len(panelColors)], kx+16, ky, esc(cut(r.Judge, 18)))
		}
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}
