package audit

import (
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/judgestats"
)

// TestValidityBarsWithoutRedGreen: the validity bars tell valid from
// invalid without colour (a pattern on the invalid part, a key that shows
// it), in colours readers with deuteranopia tell apart: no red and green.
func TestValidityBarsWithoutRedGreen(t *testing.T) {
	t.Parallel()
	v := Validity{ByType: []TypeValidity{{Type: "SUGGEST", Total: 10, Valid: 7, Invalid: 2, Unjudged: 1, Rate: ptr(7.0 / 9)}},
		Overall: TypeValidity{Type: "Overall", Total: 10, Valid: 7, Invalid: 2, Unjudged: 1, Rate: ptr(7.0 / 9)}}
	svg := string(validityChart(v, "Validity by type"))
	for _, redGreen := range []string{"#55a868", "#c44e52", `class="ok"`, `class="bad"`} {
		if strings.Contains(svg, redGreen) {
			t.Errorf("the chart still draws %s", redGreen)
		}
	}
	invalid := regexp.MustCompile(`<rect [^>]*fill="url\(#([a-z0-9-]+)\)"[^>]*><title>SUGGEST invalid`).FindStringSubmatch(svg)
	if invalid == nil || !strings.Contains(svg, `<pattern id="`+invalid[1]+`"`) {
		t.Fatalf("the invalid part has no pattern:\n%s", svg)
	}
	if n := strings.Count(svg, `fill="url(#`+invalid[1]+`)"`); n < 3 { // the two bars and the key
		t.Errorf("the invalid pattern is drawn %d times; want the bars' and the key's", n)
	}
	two := string(validityChart(v, "Criteria validity by position"))
	if id := regexp.MustCompile(`<pattern id="([a-z0-9-]+)"`).FindStringSubmatch(two); id == nil || id[1] == invalid[1] {
		t.Errorf("two charts on one page share the pattern id %v", id)
	}
}

// TestClippedCorrectedRateIsMarked: a corrected rate clipped to 100% is
// not drawn as a plain dot at 100%: its marker says it is clipped.
func TestClippedCorrectedRateIsMarked(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	tr := TypeReliability{Type: "Overall", Judged: 313, Valid: 304, Rate: ptr(0.971), RateCI: &judgestats.Interval{Low: 0.946, High: 0.985},
		Labelled: ptr(int64(40)), Sensitivity: ptr(0.95), Specificity: ptr(0.5), Corrected: ptr(1.0),
		CorrectedCI: &judgestats.Interval{Low: 0.9, High: 1}, Clipped: &yes, Wide: &no}
	r := &Reliability{Sheet: "items.csv", ByType: []TypeReliability{}, Overall: tr}
	svg := string(r.Chart())
	if !strings.Contains(svg, `class="clipped"`) || !strings.Contains(svg, "clipped") {
		t.Fatalf("the clipped estimate is not marked:\n%s", svg)
	}
	if strings.Count(svg, "<circle") != 3 { // the judge's rate and the keys' two
		t.Errorf("the chart draws %d dots; the clipped estimate must not be one", strings.Count(svg, "<circle"))
	}
}

// TestRateTicksAreRound: the interval charts' axes are ticked at round
// percentages.
func TestRateTicksAreRound(t *testing.T) {
	t.Parallel()
	label := regexp.MustCompile(`class="x">([0-9.]+)%<`)
	for _, lo := range []float64{0.72, 0.43, 0.91, 0.985, 0} {
		r := &Reliability{ByType: []TypeReliability{}, Overall: TypeReliability{Type: "Overall", Rate: ptr(0.99),
			RateCI: &judgestats.Interval{Low: lo, High: 1}}}
		p := &PanelVerdicts{kind: "validity", Rates: []TypeValidRates{{Type: "all", Panel: RateFigure{Judge: "panel", Rate: ptr(0.99),
			Interval: &judgestats.Interval{Low: lo, High: 1}}}}}
		for name, svg := range map[string]template.HTML{"reliability": r.Chart(), "panel": p.Chart()} {
			ticks := label.FindAllStringSubmatch(string(svg), -1)
			if len(ticks) < 3 {
				t.Fatalf("%s, low %v: %d ticks", name, lo, len(ticks))
			}
			first, _ := strconv.Atoi(ticks[0][1])
			second, _ := strconv.Atoi(ticks[1][1])
			step := second - first
			if !slices.Contains([]int{1, 2, 5, 10, 20, 25}, step) {
				t.Errorf("%s, low %v: ticks %v are %d points apart", name, lo, ticks, step)
			}
			for _, m := range ticks {
				v, err := strconv.Atoi(m[1])
				if err != nil || v%step != 0 {
					t.Errorf("%s, low %v: tick %s%% is not a round multiple of %d", name, lo, m[1], step)
				}
			}
		}
	}
}

// TestGroundedNoSignalIsProminent: on a grounded corpus's page the share
// of criteria with no training signal is a card at the top, not a grey
// sentence, and the records chart of discrimination says what it counts.
func TestGroundedNoSignalIsProminent(t *testing.T) {
	t.Parallel()
	rep := &Report{Corpus: CorpusInfo{RubricKind: RubricGrounded, Paths: []string{"g"}}, Grounded: &Grounded{Measured: 20, Constant: 7,
		ByPosition: []TypeValidity{}, Validity: TypeValidity{Type: "Overall"}}, InputProblems: []Problem{}, Unavailable: []Unavailable{}}
	page := string(render(t, rep.WriteHTML))
	card := regexp.MustCompile(`<div class="card warn"><b>35\.0%</b><span>[^<]*no training signal`).FindString(page)
	if card == "" {
		t.Fatalf("no card for the criteria with no training signal:\n%s", page[:min(len(page), 3000)])
	}
	d := &Discrimination{Measured: 1, RecordsWith: DiscrimCount{Type: "records", Items: 3}}
	rep = &Report{Discrimination: d}
	var titles []string
	for _, c := range rep.discrimCharts() {
		titles = append(titles, regexp.MustCompile(`class="t">([^<]*)<`).FindStringSubmatch(string(c))[1])
	}
	if !strings.Contains(strings.Join(titles, "|"), "Measured records with at least one item of each kind") {
		t.Errorf("the records chart's title: %q", titles)
	}
}
