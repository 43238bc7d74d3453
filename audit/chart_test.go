package audit

import (
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// box is where a text of a chart is drawn, estimated from its font size
// (an average glyph is 0.6 em wide).
type box struct {
	text           string
	x0, y0, x1, y1 float64
}

func (a box) overlaps(b box) bool {
	const slack = 0.5
	return a.x0+slack < b.x1 && b.x0+slack < a.x1 && a.y0+slack < b.y1 && b.y0+slack < a.y1
}

var fontPx = map[string]float64{"t": 13, "v": 10, "x": 11, "y": 11, "a": 11, "l": 12, "r": 12, "k": 11}

// textBoxes reads the text elements of one SVG chart.
func textBoxes(t *testing.T, svg template.HTML) []box {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	var out []box
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("chart is not well-formed SVG: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "text" {
			continue
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		var content string
		if err := d.DecodeElement(&content, &se); err != nil {
			t.Fatal(err)
		}
		x, _ := strconv.ParseFloat(attr["x"], 64)
		y, _ := strconv.ParseFloat(attr["y"], 64)
		size := fontPx[attr["class"]]
		w := float64(utf8.RuneCountInString(content)) * size * 0.6
		b := box{text: content, y0: y - 0.8*size, y1: y + 0.2*size}
		switch attr["class"] {
		case "v", "x", "a": // text-anchor middle
			b.x0, b.x1 = x-w/2, x+w/2
		case "y", "l": // end
			b.x0, b.x1 = x-w, x
		default:
			b.x0, b.x1 = x, x+w
		}
		if tr := attr["transform"]; strings.HasPrefix(tr, "rotate(-90") { // about (x, y): the text runs upwards
			b = box{text: content, x0: x - 0.8*size, x1: x + 0.2*size, y0: y - w/2, y1: y + w/2}
		}
		out = append(out, b)
	}
}

// TestChartsReadableAtScale draws the charts of a 20,840-record corpus
// (counts in the tens of thousands, 24 item counts, 20 length bins) and
// checks that no two labels of a chart overlap, that every label stays in
// the chart, and that the axis title keeps clear of the tick labels.
func TestChartsReadableAtScale(t *testing.T) {
	t.Parallel()
	var items []string
	var itemCounts []int64
	for k := 1; k <= 24; k++ {
		items = append(items, strconv.Itoa(k))
		itemCounts = append(itemCounts, int64(20840*math.Exp(-math.Pow(float64(k)-7, 2)/8)/5))
	}
	var pass, tokens []Range
	for i := range 10 {
		pass = append(pass, Range{Lo: float64(i) / 10, Hi: float64(i+1) / 10, Count: int64(900 + 331*((i*7)%10))})
	}
	for i := range 20 {
		tokens = append(tokens, Range{Lo: float64(i * 2000), Hi: float64((i + 1) * 2000), Count: int64(166720 * math.Exp(-float64(i)/3) / 3)})
	}
	charts := map[string]template.HTML{
		"items per record": histogram("Items per record (srar)", "items", "records", items, itemCounts, "#4c72b0"),
		"pass rates":       rangeChart("Pass rate per record", "pass rate", "records", pass, 1, "#55a868"),
		"rollout lengths":  rangeChart("Rollout length", "completion tokens", "rollouts", tokens, 0, "#8172b2"),
		"few records":      histogram("Items per record (srar)", "items", "records", []string{"3", "4", "5"}, []int64{2, 7, 1}, "#4c72b0"),
	}
	for name, svg := range charts {
		boxes := textBoxes(t, svg)
		for i, a := range boxes {
			if a.x0 < 0 || a.x1 > chartW || a.y0 < 0 || a.y1 > chartH {
				t.Errorf("%s: label %q (%.0f..%.0f, %.0f..%.0f) leaves the %dx%d chart", name, a.text, a.x0, a.x1, a.y0, a.y1, chartW, chartH)
			}
			for _, b := range boxes[i+1:] {
				if a.overlaps(b) {
					t.Errorf("%s: labels %q and %q overlap", name, a.text, b.text)
				}
			}
		}
	}
	// the counts a chart leaves unlabelled are in its bars' tooltips
	for i, c := range itemCounts {
		if !strings.Contains(string(charts["items per record"]), fmt.Sprintf("<title>%s: %s</title>", items[i], num(c))) {
			t.Errorf("bar %s has no tooltip with its count %s", items[i], num(c))
		}
	}
}
