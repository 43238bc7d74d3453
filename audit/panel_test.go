package audit

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/schema"
)

// handPanelRecord is one record with three items and a panel of three
// judges whose votes are written by hand:
//
//	item 0: a valid, b valid, c valid     -> panel valid   [3 valid, 0 invalid]
//	item 1: a valid, b invalid, c failed  -> panel invalid [1, 1]: a 1-1 split and a failure
//	item 2: a invalid, b invalid, c invalid -> panel invalid [0, 3]
//
// Fleiss: P_i = 1, 0, 1, so P̄ = 2/3; 4 valid and 4 invalid ratings, P_e =
// 1/2; κ = (2/3 - 1/2)/(1/2) = 1/3. Agreement with the panel: a 2 of 3
// (item 1), b 3 of 3, c 2 of 2 with 1 failure. The panel's rate: 1 of 3.
func handPanelRecord() schema.Record {
	rec := corpusfix.Record(0, schema.StyleSRaR, func(items []schema.Item) []schema.Item { return items[:3] }, nil)
	rec.Rollouts = nil
	yes, no := ptr(true), ptr(false)
	v := func(judge string, valid *bool) schema.JudgeVerdict {
		return schema.JudgeVerdict{Judge: judge, Valid: valid}
	}
	stored := []bool{true, false, false}
	for k := range rec.Rubric {
		rec.Rubric[k].Valid = ptr(stored[k])
	}
	rec.Panel = &schema.Panel{
		Judges: []schema.PanelMember{{Name: "a", Stage: "judge", Model: "model-a"}, {Name: "b", Stage: "judge", Model: "model-b"}, {Name: "c", Stage: "judge", Model: "model-c"}},
		Validity: []schema.ItemVerdicts{
			{ItemID: rec.Rubric[0].ID, Verdicts: []schema.JudgeVerdict{v("a", yes), v("b", yes), v("c", yes)}},
			{ItemID: rec.Rubric[1].ID, Verdicts: []schema.JudgeVerdict{v("a", yes), v("b", no), v("c", nil)}},
			{ItemID: rec.Rubric[2].ID, Verdicts: []schema.JudgeVerdict{v("a", no), v("b", no), v("c", no)}},
		},
	}
	rec.PassRate, rec.NCorrect = 0, 0
	return rec
}

// TestJudgePanelHandComputed checks the section's figures on the hand-made
// record, in a run directory and in a JSONL file, and a stored verdict
// that is not the majority of the votes is counted.
func TestJudgePanelHandComputed(t *testing.T) {
	t.Parallel()
	rec := handPanelRecord()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, []schema.Record{rec}, 10)
	jsonl := filepath.Join(t.TempDir(), "export")
	writeJSONLExport(t, jsonl, []schema.Record{rec})
	for name, path := range map[string]string{"run": dir, "jsonl": jsonl} {
		p := auditPath(t, Options{}, path).JudgePanel
		if p == nil || p.Validity == nil {
			t.Fatalf("%s: no panel section: %+v", name, p)
		}
		v := p.Validity
		if p.Records != 1 || len(p.Judges) != 3 || p.Judges[2] != (PanelMember{Name: "c", Stage: "judge", Model: "model-c", Records: 1}) {
			t.Errorf("%s: records %d, judges %+v", name, p.Records, p.Judges)
		}
		if k := v.InterJudge[0]; k.Kappa == nil || math.Abs(*k.Kappa-1.0/3) > 1e-12 || k.Items != 3 {
			t.Errorf("%s: Fleiss' kappa %+v, want 1/3 over 3 items", name, k)
		}
		want := []struct {
			judge            string
			answered, failed int64
			agreement        float64
		}{{"a", 3, 0, 2.0 / 3}, {"b", 3, 0, 1}, {"c", 2, 1, 1}}
		for i, w := range want {
			j := v.Judges[i]
			if j.Judge != w.judge || j.Answered != w.answered || j.Failed != w.failed || j.Agreement == nil || math.Abs(*j.Agreement-w.agreement) > 1e-12 {
				t.Errorf("%s: judge %+v, want %+v", name, j, w)
			}
		}
		if r := v.Rates[0].Panel; r.Valid != 1 || r.Of != 3 || r.Failed != 1 || r.Interval == nil {
			t.Errorf("%s: the panel's rate %+v, want 1 of 3 with one item a judge failed on", name, r)
		}
		if v.Verdicts != 3 || v.RuleMismatches != 0 || p.Satisfaction != nil || p.Criteria != nil {
			t.Errorf("%s: %d verdicts, %d mismatches, satisfaction %v, criteria %v", name, v.Verdicts, v.RuleMismatches, p.Satisfaction, p.Criteria)
		}
	}
	// People labelled items 0 and 1 valid, item 2 invalid: against them a
	// is right on all three (sensitivity 2/2, specificity 1/1), b misses
	// item 1 (sensitivity 1/2), c answered items 0 and 2 only (1/1, 1/1).
	var anns []Annotation
	for k, valid := range []bool{true, true, false} {
		anns = append(anns, Annotation{Line: k + 2, RecordID: rec.ID, ItemID: rec.Rubric[k].ID, Text: rec.Rubric[k].Text, Verdict: ptr(valid)})
	}
	withSheet := auditPath(t, Options{Human: anns, HumanSheet: "items.csv"}, dir)
	people := withSheet.JudgePanel.Validity.People
	if text := string(render(t, withSheet.WriteText)); !strings.Contains(text, "  b             3   50.0% (1/2)  100.0% (1/1)") {
		t.Errorf("the text report does not show b against people:\n%s", text)
	}
	wantPeople := []struct {
		judge      string
		labelled   int64
		sens, spec float64
	}{{"a", 3, 1, 1}, {"b", 3, 0.5, 1}, {"c", 2, 1, 1}}
	for i, w := range wantPeople {
		if i >= len(people) {
			t.Fatalf("people figures %+v", people)
		}
		j := people[i]
		if j.Judge != w.judge || j.Labelled != w.labelled || j.Sensitivity == nil || *j.Sensitivity != w.sens || j.Specificity == nil || *j.Specificity != w.spec {
			t.Errorf("judge against people %+v, want %+v", j, w)
		}
	}
	if p := auditPath(t, Options{}, dir).JudgePanel.Validity.People; p != nil {
		t.Errorf("without a sheet: people figures %+v", p)
	}
	// Item 1 stored valid: its 1-1 split and a failure is not a majority.
	rec.Rubric[1].Valid = ptr(true)
	tampered := filepath.Join(t.TempDir(), "tampered")
	corpusfix.WriteRun(t, tampered, []schema.Record{rec}, 10)
	if v := auditPath(t, Options{}, tampered).JudgePanel.Validity; v.RuleMismatches != 1 {
		t.Errorf("a stored verdict against the votes' majority: %d mismatches counted, want 1", v.RuleMismatches)
	}
}

// panelJudges are three simulated judges of different error rates, one
// that sometimes fails.
var panelJudges = []synthcorpus.PanelJudge{
	{Name: "exact", Model: "sim-exact"},
	{Name: "noisy", Model: "sim-noisy", FalseValid: 0.3, FalseInvalid: 0.2},
	{Name: "flaky", Model: "sim-flaky", FalseValid: 0.1, FalseInvalid: 0.1, Fail: 0.3},
}

// panelRun writes n good records, each with a panel of panelJudges.
func panelRun(t *testing.T, n int) string {
	t.Helper()
	var recs []schema.Record
	for i := range n {
		rec := corpusfix.Record(i, schema.StyleSRaR, nil, nil)
		synthcorpus.AddPanel(&rec, 7, panelJudges...)
		recs = append(recs, rec)
	}
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 16)
	return dir
}

// TestJudgePanelSection: a corpus whose records carry panels (validity and
// satisfaction) reports both in text (golden), with no stored verdict
// against the rule and no structural violation; every judge's verdicts and
// failures add up to the panel's; the judge without errors agrees with the
// panel more than the noisy one.
func TestJudgePanelSection(t *testing.T) {
	t.Parallel()
	dir := panelRun(t, 40)
	rep := auditPath(t, Options{}, dir)
	p := rep.JudgePanel
	if p == nil || p.Validity == nil || p.Satisfaction == nil {
		t.Fatalf("panel section %+v", p)
	}
	if rep.Structure.Violations != 0 {
		t.Errorf("violations %+v", rep.Structure.ByRule)
	}
	for name, v := range map[string]*PanelVerdicts{"validity": p.Validity, "satisfaction": p.Satisfaction} {
		if v.RuleMismatches != 0 {
			t.Errorf("%s: %d stored verdicts against the rule", name, v.RuleMismatches)
		}
		for _, j := range v.Judges {
			if j.Answered+j.Failed != v.Verdicts {
				t.Errorf("%s: judge %+v: answered and failed do not add up to %d", name, j, v.Verdicts)
			}
		}
		if exact, noisy := v.Judges[0], v.Judges[1]; *exact.Agreement <= *noisy.Agreement || v.Judges[2].Failed == 0 {
			t.Errorf("%s: judges %+v", name, v.Judges)
		}
	}
	if p.Validity.Verdicts != rep.Validity.Overall.Valid+rep.Validity.Overall.Invalid {
		t.Errorf("%d panel verdicts, %d judged items", p.Validity.Verdicts, rep.Validity.Overall.Valid+rep.Validity.Overall.Invalid)
	}
	text := render(t, rep.WriteText)
	at := strings.Index(string(text), "\nJudge panel:")
	end := strings.Index(string(text)[at+1:], "\n\n"+"Grounded")
	if end < 0 {
		end = len(text) - at - 1
	}
	checkGolden(t, "judge-panel.txt", dir, text[at+1:at+1+end])
	page := string(render(t, rep.WriteHTML))
	for _, want := range []string{"<h2>Judge panel</h2>", "Validity of rubric items: 232 panel verdicts", "Satisfaction (rollouts x items)",
		`aria-label="Validity of rubric items with 95% intervals"`, "<title>all: noisy 74.1%, 95% interval 68.1-79.3%</title>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML page has no %q", want)
		}
	}
	if out := os.Getenv("PANEL_HTML"); out != "" { // for a look in a browser
		os.WriteFile(out, []byte(page), 0o644)
	}
}

// TestNoPanelNoSection: a corpus written before panels (or with one judge
// per stage) has no panel section, and says nothing is missing.
func TestNoPanelNoSection(t *testing.T) {
	t.Parallel()
	rep := auditPath(t, Options{}, sharedGoldenRun(t))
	if rep.JudgePanel != nil {
		t.Errorf("a corpus without panels has a panel section: %+v", rep.JudgePanel)
	}
	for _, u := range rep.Unavailable {
		if strings.Contains(strings.ToLower(u.Section+u.Reason), "panel") {
			t.Errorf("unavailable names the panel: %+v", u)
		}
	}
	if text := string(render(t, rep.WriteText)); strings.Contains(text, "panel") {
		t.Errorf("the text report mentions a panel")
	}
	if html := string(render(t, rep.WriteHTML)); strings.Contains(html, "Judge panel") {
		t.Errorf("the HTML report has a panel section")
	}
}

// TestJudgePanelCriteria: the grounded criteria's panel is counted by
// position, every judged criterion once, none against the rule.
func TestJudgePanelCriteria(t *testing.T) {
	t.Parallel()
	var recs []schema.Record
	judged := int64(0)
	for i := range 6 {
		rec := groundedRecord(i, 2)
		synthcorpus.AddPanel(&rec, 3, panelJudges...)
		for _, q := range rec.Grounded.Questions {
			for _, c := range q.Criteria {
				if c.Valid != nil {
					judged++
				}
			}
		}
		recs = append(recs, rec)
	}
	p := auditPath(t, Options{}, groundedRun(t, recs)).JudgePanel
	if p == nil || p.Criteria == nil || p.Validity != nil {
		t.Fatalf("panel section %+v", p)
	}
	c := p.Criteria
	if c.Verdicts != judged || c.RuleMismatches != 0 || c.Rates[1].Type != "criterion 1" {
		t.Errorf("criteria: %d verdicts (want %d), %d mismatches, rates %+v", c.Verdicts, judged, c.RuleMismatches, c.Rates)
	}
}

// TestJudgePanelOfSomeRecords: in a corpus where only some records have a
// panel (in Parquet shards and in JSONL), the section is the one of those
// records alone, and a record repeated in a later input with another
// panel counts once, with its first panel.
func TestJudgePanelOfSomeRecords(t *testing.T) {
	t.Parallel()
	var all, some []schema.Record
	for i := range 12 {
		rec := corpusfix.Record(i, schema.StyleSRaR, nil, nil)
		if i%3 == 1 {
			synthcorpus.AddPanel(&rec, 7, panelJudges...)
			some = append(some, rec)
		}
		all = append(all, rec)
	}
	again := some[1]
	synthcorpus.AddPanel(&again, 8, panelJudges[:2]...)
	root := t.TempDir()
	allRun, someRun := filepath.Join(root, "all"), filepath.Join(root, "some")
	corpusfix.WriteRun(t, allRun, all, 5)
	corpusfix.WriteRun(t, someRun, some, 5)
	allJSONL, againJSONL := filepath.Join(root, "all-jsonl"), filepath.Join(root, "again-jsonl")
	writeJSONLExport(t, allJSONL, all)
	writeJSONLExport(t, againJSONL, []schema.Record{again})
	want := panelOf(t, someRun)
	if !strings.Contains(want, `"records":4`) {
		t.Fatalf("the section of the records with a panel: %s", want)
	}
	for name, paths := range map[string][]string{"run": {allRun}, "jsonl": {allJSONL}, "repeated": {allRun, againJSONL}} {
		if got := panelOf(t, paths...); got != want {
			t.Errorf("%s: panel section\n%s\nwant the one of the records with a panel alone\n%s", name, got, want)
		}
	}
}

// panelOf is the judge-panel section of the corpus at paths, as JSON.
func panelOf(t *testing.T, paths ...string) string {
	t.Helper()
	in, err := Open(paths...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := judgePanel(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
