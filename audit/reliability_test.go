package audit

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/schema"
)

// peopleSay is how the test's people label an item of a type, from the
// stored verdict and the item's place among that type's judged items.
func peopleSay() map[string]func(stored bool, k int) *bool {
	return map[string]func(stored bool, k int) *bool{
		// people disagree with the judge now and then both ways: defined
		schema.TypeSuggest: func(stored bool, k int) *bool { return ptr(stored != (k%6 == 0)) },
		// people call every item valid: the specificity is unknown
		schema.TypePitfall: func(bool, int) *bool { return ptr(true) },
		// people say the opposite of the judge: no better than chance
		schema.TypeBonus: func(stored bool, _ int) *bool { return ptr(!stored) },
		// ANSWER items are not on the sheet: no labels
		schema.TypeFactual: func(stored bool, _ int) *bool { return ptr(stored) },
		schema.TypeProcess: func(stored bool, _ int) *bool { return ptr(stored) },
	}
}

// labelledSheet is people's verdicts on every judged item of recs (by
// peopleSay), a blank row and a row for an item the corpus does not hold;
// want is the tables the verdicts give, counted here from the records.
func labelledSheet(recs []schema.Record) (anns []Annotation, want map[string]*judgestats.Table) {
	want = map[string]*judgestats.Table{}
	seen, rules, done := map[string]int{}, peopleSay(), map[string]bool{}
	for _, r := range recs {
		for _, it := range r.Rubric {
			say := rules[it.Type]
			key := r.ID + "/" + fmt.Sprint(it.ID)
			if it.Valid == nil || say == nil || done[key] {
				continue // a sheet names an item once
			}
			done[key] = true
			people := say(*it.Valid, seen[it.Type])
			seen[it.Type]++
			anns = append(anns, Annotation{RecordID: r.ID, ItemID: it.ID, Verdict: people})
			tab := want[it.Type]
			if tab == nil {
				tab = &judgestats.Table{}
				want[it.Type] = tab
			}
			tab.Add(*people, *it.Valid)
		}
	}
	answer := recs[0].Rubric[len(recs[0].Rubric)-1] // ANSWER items are not labelled: this row is left blank
	anns = append(anns, Annotation{RecordID: recs[0].ID, ItemID: answer.ID}, Annotation{RecordID: "nowhere", ItemID: 1, Verdict: ptr(true)})
	return anns, want
}

// sheetFixture is the fixture corpus, people's sheet on it (labelledSheet)
// and its audit with the sheet.
type sheetFixture struct {
	recs []schema.Record
	dir  string
	anns []Annotation
	want map[string]*judgestats.Table
	rep  *Report
}

// auditWithSheet writes the fixture run and audits it with the sheet,
// named name in the report.
func auditWithSheet(t *testing.T, name string) sheetFixture {
	t.Helper()
	return auditWithSheetAt(t, filepath.Join(t.TempDir(), "run"), name)
}

// auditWithSheetAt is auditWithSheet writing the run at dir.
func auditWithSheetAt(t *testing.T, dir, name string) sheetFixture {
	t.Helper()
	f := sheetFixture{recs: corpusfix.Records(), dir: dir}
	corpusfix.WriteRun(t, f.dir, f.recs, 16)
	f.anns, f.want = labelledSheet(f.recs)
	f.rep = auditPath(t, Options{Human: f.anns, HumanSheet: name}, f.dir)
	return f
}

// TestReliabilityAgainstPeople: with a sheet, every type gets the judge's
// table against people as they labelled it, a corrected rate where one is
// defined (the same as judgestats computes from the type's counts) and
// the reason where not: a type people called all valid, one where the
// judge is no better than chance, one nobody labelled. The text section
// is held to a golden file; the JSON says null, never a number, where the
// rate is undefined.
func TestReliabilityAgainstPeople(t *testing.T) {
	t.Parallel()
	f := sharedSheetFixture(t)
	anns, want, rep := f.anns, f.want, f.rep
	rel := rep.Reliability
	if rel == nil || rel.Method != "rogan-gladen" || rel.Sheet != "items.csv" {
		t.Fatalf("reliability %+v; want the Rogan-Gladen section of items.csv", rel)
	}
	if r := rel.Rows; r.Rows != len(anns) || r.Blank != 1 || r.Missing != 1 {
		t.Errorf("sheet rows %+v; want %d rows, 1 blank, 1 missing", *r, len(anns))
	}
	undefined := map[string]judgestats.Undefined{
		schema.TypePitfall: judgestats.NoPeopleInvalid, schema.TypeBonus: judgestats.NoBetterThanChance,
		schema.TypeAnswer: judgestats.NoLabels,
	}
	for i, tr := range append(rel.ByType, rel.Overall) {
		tab := want[tr.Type]
		if tab == nil {
			tab = &judgestats.Table{}
		}
		if tr.Type == "Overall" {
			tab = &judgestats.Table{}
			for _, w := range want {
				tab.ValidValid, tab.ValidInvalid = tab.ValidValid+w.ValidValid, tab.ValidInvalid+w.ValidInvalid
				tab.InvalidValid, tab.InvalidInvalid = tab.InvalidValid+w.InvalidValid, tab.InvalidInvalid+w.InvalidInvalid
			}
		}
		if *tr.Table != *tab || *tr.Labelled != tab.Labelled() {
			t.Errorf("%s: table %+v (%d labelled); the sheet gives %+v", tr.Type, *tr.Table, *tr.Labelled, *tab)
		}
		v := append(rep.Validity.ByType, rep.Validity.Overall)[i]
		if tr.Type != v.Type || tr.Judged != v.Valid+v.Invalid || tr.Valid != v.Valid {
			t.Errorf("%s: %d of %d judged valid; validity says %s %d of %d", tr.Type, tr.Valid, tr.Judged, v.Type, v.Valid, v.Valid+v.Invalid)
		}
		c, why := judgestats.Correct(tr.Valid, tr.Judged, *tab, judgestats.Z95)
		if why != undefined[tr.Type] || string(tr.Undefined) != string(why) {
			t.Errorf("%s: undefined %q, judgestats says %q; want %q", tr.Type, tr.Undefined, why, undefined[tr.Type])
		}
		switch {
		case why != "" && (tr.Corrected != nil || tr.CorrectedCI != nil):
			t.Errorf("%s: a corrected rate %v where it is undefined (%s)", tr.Type, *tr.Corrected, why)
		case why == "" && (tr.Corrected == nil || *tr.Corrected != c.Rate || *tr.CorrectedCI != c.CI):
			t.Errorf("%s: corrected %v %v; want %v %+v", tr.Type, tr.Corrected, tr.CorrectedCI, c.Rate, c.CI)
		}
	}
	var section bytes.Buffer
	rep.textReliability(&section)
	golden.Check(t, filepath.Join("testdata", "reliability-sheet.txt"), section.Bytes())
	for _, line := range strings.Split(section.String(), "\n") {
		if len([]rune(line)) > Width {
			t.Errorf("line wider than %d: %q", Width, line)
		}
	}
	var js struct {
		Reliability struct {
			ByType []map[string]any `json:"by_type"`
		} `json:"reliability"`
	}
	if err := json.Unmarshal(render(t, rep.WriteJSON), &js); err != nil {
		t.Fatal(err)
	}
	for _, tr := range js.Reliability.ByType {
		if _, bad := undefined[tr["type"].(string)]; bad && (tr["corrected_rate"] != nil || tr["undefined"] == nil) {
			t.Errorf("JSON %s: corrected_rate %v, undefined %v; want null and the reason", tr["type"], tr["corrected_rate"], tr["undefined"])
		}
	}
}

// TestReliabilityWithoutSheet: without a sheet each type gets the Wilson
// interval of the judge's rate and nothing else; the text section is held
// to a golden file.
func TestReliabilityWithoutSheet(t *testing.T) {
	t.Parallel()
	rep := auditPath(t, Options{}, sharedGoldenRun(t))
	rel := rep.Reliability
	if rel == nil || rel.Method != "wilson" || rel.Sheet != "" || rel.Rows != nil {
		t.Fatalf("reliability %+v; want Wilson intervals only", rel)
	}
	for _, tr := range append(rel.ByType, rel.Overall) {
		iv, ok := judgestats.Wilson(tr.Valid, tr.Judged, judgestats.Z95)
		if ok != (tr.RateCI != nil) || ok && *tr.RateCI != iv {
			t.Errorf("%s: interval %v; want the Wilson interval of %d of %d, %+v", tr.Type, tr.RateCI, tr.Valid, tr.Judged, iv)
		}
		if tr.Table != nil || tr.Labelled != nil || tr.Corrected != nil || tr.Undefined != "" {
			t.Errorf("%s: people's figures without a sheet: %+v", tr.Type, tr)
		}
	}
	var section bytes.Buffer
	rep.textReliability(&section)
	golden.Check(t, filepath.Join("testdata", "reliability-wilson.txt"), section.Bytes())
}

// TestGateOnLowerBound: --min-validity applies to the lower bound when the
// gate says so, and to the rate otherwise, as before. The fixture's rate
// (valid of judged, overall) lies above its Wilson lower bound, so a
// threshold between them passes one gate and fails the other; with a
// sheet the corrected rate's bound is checked, and an undefined one fails.
func TestGateOnLowerBound(t *testing.T) {
	t.Parallel()
	f := sharedSheetFixture(t)
	recs, dir, sheet := f.recs, f.dir, f.rep
	plain := auditPath(t, Options{}, dir)
	o := plain.Reliability.Overall
	between := (o.RateCI.Low + *o.Rate) / 2
	if fails := plain.Failures(Gate{MinValidity: between, MaxViolations: -1}); len(fails) != 0 {
		t.Errorf("the rate %v is above %v, yet the rate gate fails: %q", *o.Rate, between, fails)
	}
	fails := plain.Failures(Gate{MinValidity: between, MaxViolations: -1, OnLower: true})
	if len(fails) != 1 || !strings.Contains(fails[0], "Wilson") {
		t.Errorf("the lower bound %v is below %v: want one failure naming the Wilson bound, got %q", o.RateCI.Low, between, fails)
	}
	if fails := plain.Failures(Gate{MinValidity: o.RateCI.Low - 0.01, MaxViolations: -1, OnLower: true}); len(fails) != 0 {
		t.Errorf("the lower bound %v is above the threshold, yet the gate fails: %q", o.RateCI.Low, fails)
	}

	ci := sheet.Reliability.Overall.CorrectedCI
	if ci == nil {
		t.Fatal("no overall corrected interval")
	}
	fails = sheet.Failures(Gate{MinValidity: ci.Low + 0.001, MaxViolations: -1, OnLower: true})
	if len(fails) != 1 || !strings.Contains(fails[0], "corrected") {
		t.Errorf("above the corrected lower bound %v: want one failure naming it, got %q", ci.Low, fails)
	}

	var chance []Annotation // people contradict the judge everywhere
	for _, r := range recs {
		for _, it := range r.Rubric {
			if it.Valid != nil {
				chance = append(chance, Annotation{RecordID: r.ID, ItemID: it.ID, Verdict: ptr(!*it.Valid)})
			}
		}
	}
	bad := auditPath(t, Options{Human: chance, HumanSheet: "items.csv"}, dir)
	fails = bad.Failures(Gate{MinValidity: 0, MaxViolations: -1, OnLower: true})
	if len(fails) != 1 || !strings.Contains(fails[0], "no better than chance") {
		t.Errorf("a judge no better than chance: want the gate to fail saying so, got %q", fails)
	}
}

// TestReliabilityHTML: the page draws the rates as error bars, a grey one
// for the judge's rate and a green one for the corrected rate of every
// type that has one, in well-formed SVG, and lists the reasons where a
// type has none.
func TestReliabilityHTML(t *testing.T) {
	t.Parallel()
	rep := auditWithSheet(t, "sheets/<people>.csv").rep
	page := string(render(t, rep.WriteHTML))
	chart := regexp.MustCompile(`(?s)<svg [^>]*aria-label="Validity with 95% intervals".*?</svg>`).FindString(page)
	if chart == "" {
		t.Fatal("no interval chart on the page")
	}
	d := xml.NewDecoder(strings.NewReader(chart))
	bars := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the interval chart is not well-formed SVG: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "g" {
			for _, a := range se.Attr {
				if a.Name.Local == "stroke" {
					bars[a.Value]++
				}
			}
		}
	}
	rel := rep.Reliability
	corrected := 0
	for _, tr := range append(rel.ByType, rel.Overall) {
		if tr.Corrected != nil {
			corrected++
		}
	}
	if bars[barColor("judge")] != len(rel.ByType)+1 || bars[barColor("corr")] != corrected {
		t.Errorf("error bars %v; want %d of the judge's rates and %d corrected ones", bars, len(rel.ByType)+1, corrected)
	}
	if !strings.Contains(page, "sheets/&lt;people&gt;.csv") || strings.Contains(page, "<people>") {
		t.Error("the sheet's name is not escaped")
	}
	for _, why := range []judgestats.Undefined{judgestats.NoPeopleInvalid, judgestats.NoBetterThanChance, judgestats.NoLabels} {
		if text, _, _ := strings.Cut(why.Explain(), " ("); !strings.Contains(page, escapeHTML(text)) {
			t.Errorf("the page does not say %q", why.Explain())
		}
	}
}

// TestReliabilityNote: each way a corrected rate can be special is said in
// words that name the figures it comes from.
func TestReliabilityNote(t *testing.T) {
	t.Parallel()
	f, yes, no := ptr(0.97), ptr(true), ptr(false)
	tests := []struct {
		name string
		tr   TypeReliability
		says string
	}{
		{"undefined", TypeReliability{Undefined: NullString(judgestats.NoPeopleInvalid)}, "people called no item invalid"},
		{"wide", TypeReliability{Corrected: ptr(0.5), Wide: yes, Clipped: no}, "too few labels"},
		{"above the sensitivity", TypeReliability{Rate: f, Sensitivity: ptr(0.9), Corrected: ptr(1.0), Wide: no, Clipped: yes},
			"97.0% is above its sensitivity 90.0%"},
		{"below 1 - specificity", TypeReliability{Rate: ptr(0.05), Specificity: ptr(0.8), Corrected: ptr(0.0), Wide: no, Clipped: yes},
			"5.0% is below 100% - specificity 80.0%"},
		{"nothing special", TypeReliability{Rate: f, Corrected: ptr(0.9), Wide: no, Clipped: no}, ""},
	}
	for _, tt := range tests {
		got := tt.tr.Note()
		if tt.says == "" && got != "" || !strings.Contains(got, tt.says) {
			t.Errorf("%s: note %q; want it to say %q", tt.name, got, tt.says)
		}
	}
}
