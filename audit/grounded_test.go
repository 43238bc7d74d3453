package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/schema"
)

// groundedRecord is passage i with questions of 5 criteria (weights 3, 2,
// 2, 1, 1: W = 9); criterion 2 of question 0 is judged invalid, criterion 5
// is left unjudged; criterion 4 has no expected concepts.
func groundedRecord(i, questions int) schema.Record {
	passage := fmt.Sprintf("Passage %d. A write-ahead log records each change and forces it to stable storage before the data pages are modified, so that recovery can replay it after a crash.", i)
	var qs []schema.GroundedQuestion
	for k := range questions {
		var crit []schema.Criterion
		for c, w := range []float64{3, 2, 2, 1, 1} {
			cr := schema.Criterion{ID: fmt.Sprintf("c%d", c+1), Weight: w, Name: fmt.Sprintf("criterion %d", c+1),
				Description: "The answer explains a point.", RequiredElements: []string{"a point"}, ScoringGuide: "Full for the point.",
				VerificationMethod: "Check the point.", ExpectedKeywords: []string{"log"}, ExpectedConcepts: []string{"durability"}}
			switch {
			case c == 1 && k == 0:
				cr.Valid = ptr(false)
			case c < 4:
				cr.Valid = ptr(true)
			}
			if c == 3 {
				cr.ExpectedConcepts = nil
			}
			crit = append(crit, cr)
		}
		q := fmt.Sprintf("Question %d of passage %d: why must a change reach stable storage before the pages are modified?", k, i)
		if i == 2 && k == 0 { // copies ten words in a row
			q = "Explain why a write-ahead log records each change and forces it to stable storage before the data pages are modified."
		}
		qs = append(qs, schema.GroundedQuestion{Index: int32(k), Question: q, Rationale: "r", Criteria: crit})
	}
	return schema.Record{
		ID: fmt.Sprintf("g%03d", i), Source: "fixture", Split: "train", Style: schema.StyleGrounded, Rubric: []schema.Item{}, Rollouts: []schema.Rollout{},
		Provenance: schema.Provenance{DistillModel: "sim", SpecVersion: schema.SpecVersion, ToolVersion: "test", JobFingerprint: "fp-g",
			CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		Grounded: &schema.Grounded{
			DocID: fmt.Sprintf("doc%d.md", i), PassageID: fmt.Sprintf("doc%d.md#0", i), Passage: passage, DocHash: "0123456789abcdef",
			Analysis:  schema.Analysis{Genre: []string{"tutorial", "paper"}[i%2], Depth: "intermediate", ReasoningMode: "causal", Concepts: []string{"WAL"}},
			Questions: qs,
		},
	}
}

// groundedViolating breaks each grounded rule once, in rule order.
func groundedViolating() []schema.Record {
	edit := func(i int, f func(g *schema.Grounded)) schema.Record {
		r := groundedRecord(i, 1)
		f(r.Grounded)
		return r
	}
	noPayload := groundedRecord(50, 1)
	noPayload.Grounded = nil
	return []schema.Record{
		noPayload,
		edit(51, func(g *schema.Grounded) { g.Passage = " " }),
		edit(52, func(g *schema.Grounded) { g.Questions = nil }),
		edit(53, func(g *schema.Grounded) { g.Questions[0].Question = "" }),
		edit(54, func(g *schema.Grounded) { g.Questions[0].Criteria = nil }),
		edit(55, func(g *schema.Grounded) { g.Questions[0].Criteria[2].ID = "c1" }),
		edit(56, func(g *schema.Grounded) { g.Questions[0].Criteria[0].Weight = -3 }),
		edit(57, func(g *schema.Grounded) { g.Questions[0].Criteria[4].Description = "" }),
	}
}

func groundedRun(t *testing.T, recs []schema.Record) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 3)
	return dir
}

func TestGroundedFixtureBreaksEveryRule(t *testing.T) {
	t.Parallel()
	rep := auditPath(t, Options{List: -1}, groundedRun(t, append([]schema.Record{groundedRecord(1, 2)}, groundedViolating()...)))
	got := map[string][]string{}
	for _, v := range rep.Structure.Listed {
		got[v.Rule] = append(got[v.Rule], v.RecordID)
	}
	for k, rule := range GroundedRules {
		if want := fmt.Sprintf("g%03d", 50+k); !slices.Equal(got[rule], []string{want}) {
			t.Errorf("%s: violations at %v, want at %s alone", rule, got[rule], want)
		}
	}
	for _, rule := range []string{RuleNoProblem, RuleNoAnswer, schema.RuleStyle, schema.RuleNoItems} {
		if len(got[rule]) > 0 {
			t.Errorf("a grounded record breaks the math rule %s: %v", rule, got[rule])
		}
	}
}

func TestGroundedFigures(t *testing.T) {
	t.Parallel()
	recs := []schema.Record{groundedRecord(1, 2), groundedRecord(2, 1), groundedRecord(3, 3)}
	rep := auditPath(t, Options{}, groundedRun(t, recs))
	g := rep.Grounded
	if g == nil {
		t.Fatal("no grounded section")
	}
	if g.Records != 3 || g.Questions != 6 || g.Criteria != 30 || rep.Structure.Violations != 0 {
		t.Errorf("records %d questions %d criteria %d violations %d, want 3, 6, 30, 0", g.Records, g.Questions, g.Criteria, rep.Structure.Violations)
	}
	if want := []Bin{{1, 1}, {2, 1}, {3, 1}}; !slices.Equal(g.QuestionsPerRecord, want) {
		t.Errorf("questions per record %v, want %v", g.QuestionsPerRecord, want)
	}
	if g.CriteriaPerQuestion.Mean != 5 || g.TotalWeight.Mean != 9 || g.TotalWeight.Min != 9 {
		t.Errorf("criteria per question %+v, total weight %+v", g.CriteriaPerQuestion, g.TotalWeight)
	}
	if want := []Weight{{1, 12}, {2, 12}, {3, 6}}; !slices.Equal(g.Weights, want) {
		t.Errorf("weights %v, want %v", g.Weights, want)
	}
	for _, f := range g.Completeness {
		want := int64(30)
		if f.Field == "expected_concepts" {
			want = 24
		}
		if f.Present != want || f.Total != 30 {
			t.Errorf("completeness of %s: %d of %d, want %d of 30", f.Field, f.Present, f.Total, want)
		}
	}
	// Question 0 of each passage has criterion 2 invalid: 3 invalid, 21
	// valid, 6 unjudged (criterion 5).
	if v := g.Validity; v.Valid != 21 || v.Invalid != 3 || v.Unjudged != 6 || v.Rate == nil || math.Abs(*v.Rate-21.0/24) > 1e-12 {
		t.Errorf("validity %+v", v)
	}
	if len(g.ByPosition) != 5 || g.ByPosition[1].Invalid != 3 || g.ByPosition[4].Unjudged != 6 || g.ByPosition[0].Type != "criterion 1" {
		t.Errorf("validity by position %+v", g.ByPosition)
	}
	if g.Copying != 1 || g.Overlap.Max < CopyWords {
		t.Errorf("copying %d, overlap %+v; want the one copying question found", g.Copying, g.Overlap)
	}
	if want := []Count{{"paper", 2}, {"tutorial", 1}}; !slices.Equal(g.Genres, want) {
		t.Errorf("genres %v, want %v", g.Genres, want)
	}
	if !slices.Equal(g.Depths, []Count{{"intermediate", 3}}) {
		t.Errorf("depths %v", g.Depths)
	}
	text := string(render(t, rep.WriteText))
	for _, want := range []string{"Grounded records: 3 passages, 6 questions, 30 criteria", "expected_concepts", "criterion 2", "genre", "tutorial (1)"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	for i, line := range strings.Split(text, "\n") {
		if n := len([]rune(line)); n > Width {
			t.Errorf("text line %d is %d columns wide: %q", i+1, n, line)
		}
	}
	var js struct{ Grounded *Grounded }
	if err := json.Unmarshal(render(t, rep.WriteJSON), &js); err != nil || js.Grounded == nil || js.Grounded.Copying != 1 || js.Grounded.Criteria != 30 {
		t.Errorf("JSON report's grounded section: %+v (%v)", js.Grounded, err)
	}
	html := string(render(t, rep.WriteHTML))
	for _, want := range []string{"<h2>Grounded records</h2>", "validity by position", "reasoning mode"} {
		if !strings.Contains(strings.ToLower(html), strings.ToLower(want)) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}

// TestGroundedExports: a verl export's rows are questions; a jsonl
// export's lines are passage records. Both give the same criteria figures
// as the run.
func TestGroundedExports(t *testing.T) {
	t.Parallel()
	recs := []schema.Record{groundedRecord(1, 2), groundedRecord(2, 1)}
	run := groundedRun(t, recs)
	for _, format := range []string{corpus.FormatVerl, corpus.FormatJSONL} {
		out := filepath.Join(t.TempDir(), format)
		if _, err := corpus.Export(context.Background(), run, corpus.ExportOptions{Format: format, Out: out, ToolVersion: "test", Logger: quiet()}); err != nil {
			t.Fatal(err)
		}
		rep := auditPath(t, Options{}, out)
		g := rep.Grounded
		wantRecords := int64(2)
		if format == corpus.FormatVerl {
			wantRecords = 3
		}
		if g == nil || g.Records != wantRecords || g.Questions != 3 || g.Criteria != 15 || g.Validity.Invalid != 2 || rep.Structure.Violations != 0 {
			t.Errorf("%s export: grounded %+v, %d violations", format, g, rep.Structure.Violations)
		}
	}
}

// TestAuditReadsShardsWithoutTheGroundedColumn: a shard written before the
// grounded style is audited as before, with no grounded section.
func TestAuditReadsShardsWithoutTheGroundedColumn(t *testing.T) {
	t.Parallel()
	rec := corpusfix.Record(1, schema.StyleSRaR, nil, nil)
	r := row{ID: rec.ID, Split: rec.Split, Problem: rec.Problem, Answer: rec.Answer, Style: rec.Style, Provenance: provenance{RolloutModel: rec.Provenance.RolloutModel, SpecVersion: rec.Provenance.SpecVersion}, Usage: rec.Usage, NCorrect: rec.NCorrect, PassRate: rec.PassRate}
	for _, it := range rec.Rubric {
		r.Rubric = append(r.Rubric, item{ID: it.ID, Type: it.Type, Text: it.Text, Weight: it.Weight, Polarity: it.Polarity, Valid: it.Valid})
	}
	path := filepath.Join(t.TempDir(), "old.parquet")
	if err := parquet.WriteFile(path, []row{r}); err != nil {
		t.Fatal(err)
	}
	if has, err := corpus.HasGroundedColumn(path); err != nil || has {
		t.Fatalf("the old shard has the grounded column (%v, %v)", has, err)
	}
	rep := auditPath(t, Options{}, path)
	if len(rep.InputProblems) != 0 || rep.Corpus.Records != 1 || rep.Grounded != nil || rep.Validity.Overall.Total != int64(len(rec.Rubric)) {
		t.Errorf("problems %+v, records %d, grounded %+v", rep.InputProblems, rep.Corpus.Records, rep.Grounded)
	}
}

// TestGroundedGate: --min-validity counts the verdicts on grounded criteria
// with those on math items.
func TestGroundedGate(t *testing.T) {
	t.Parallel()
	rep := auditPath(t, Options{}, groundedRun(t, []schema.Record{groundedRecord(1, 2), groundedRecord(2, 1)}))
	v := rep.Grounded.Validity
	rate := float64(v.Valid) / float64(v.Valid+v.Invalid)
	if f := rep.Failures(Gate{MinValidity: rate - 0.01, MaxViolations: -1}); len(f) != 0 {
		t.Errorf("a grounded corpus with validity %.3f fails --min-validity %.3f: %v", rate, rate-0.01, f)
	}
	f := rep.Failures(Gate{MinValidity: rate + 0.01, MaxViolations: -1})
	if len(f) != 1 || !strings.Contains(f[0], fmt.Sprintf("(%d of %d judged items valid)", v.Valid, v.Valid+v.Invalid)) {
		t.Errorf("--min-validity above the grounded validity: %v", f)
	}
}
