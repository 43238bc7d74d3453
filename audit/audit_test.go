package audit

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/schema"
)

func TestGoldenRun(t *testing.T) {
	t.Parallel()
	dir := sharedGoldenRun(t)
	rep := auditPath(t, Options{Tool: "validate test"}, dir)
	base := filepath.Dir(dir)
	checkGolden(t, "run.txt", base, render(t, rep.WriteText))
	checkGolden(t, "run.json", base, render(t, rep.WriteJSON))
	for i, line := range strings.Split(string(render(t, rep.WriteText)), "\n") {
		if n := len([]rune(line)); n > Width {
			t.Errorf("text line %d is %d columns wide: %q", i+1, n, line)
		}
	}
}

// TestFixtureBreaksEveryRule checks the fixture's purpose: every rule is
// broken, by the record made to break it, at the item made to break it.
func TestFixtureBreaksEveryRule(t *testing.T) {
	t.Parallel()
	rep := auditPath(t, Options{List: -1}, sharedGoldenRun(t))
	counted := map[string]int64{}
	for _, rc := range rep.Structure.ByRule {
		counted[rc.Rule] = rc.Violations
	}
	for _, rule := range Rules {
		if slices.Contains(GroundedRules, rule) {
			continue // TestGroundedFixtureBreaksEveryRule
		}
		if counted[rule] == 0 {
			t.Errorf("no violation of %s in the fixture", rule)
		}
	}
	type where struct {
		record string
		item   int32 // 0: the record as a whole
	}
	want := map[string]where{
		RuleSpecVersion: {"p101", 0}, RuleDuplicateID: {"p005", 0}, RuleNoProblem: {"p102", 0}, RuleNoAnswer: {"p103", 0},
		schema.RuleStyle: {"p104", 0}, schema.RuleNoItems: {"p105", 0}, schema.RuleItemID: {"p106", 9},
		schema.RuleItemType: {"p107", 2}, RuleDuplicateItem: {"p110", 3}, schema.RulePolarity: {"p111", 4},
		schema.RuleSatRate: {"p114", 1}, schema.RuleCorr: {"p115", 2}, schema.RuleSuggest: {"p116", 0},
		schema.RuleAnswerCount: {"p117", 0}, schema.RuleTooManyItems: {"p118", 0}, schema.RuleItemCount: {"p119", 0},
		RuleRolloutCounts: {"p120", 0}, RuleRolloutIndex: {"p121", 0}, RuleSatisfaction: {"p122", 0},
	}
	got := map[string][]where{}
	for _, v := range rep.Structure.Listed {
		w := where{record: v.RecordID}
		if v.ItemID != nil {
			w.item = *v.ItemID
		}
		got[v.Rule] = append(got[v.Rule], w)
	}
	for rule, w := range want {
		if !slices.Contains(got[rule], w) {
			t.Errorf("%s: want a violation at record %s item %d, got %v", rule, w.record, w.item, got[rule])
		}
	}
	if !slices.Contains(got[RuleEmpiricalMismatch], where{"p123", 2}) {
		t.Errorf("the edited sat_rate of p123 item 2 is not reported: %v", got[RuleEmpiricalMismatch])
	}
	if rep.Structure.Violations != int64(len(rep.Structure.Listed)) {
		t.Errorf("listed %d of %d violations with List -1", len(rep.Structure.Listed), rep.Structure.Violations)
	}
}

// TestGoodCorpusHasNoViolations: the well-formed records break nothing, and
// the figures follow from how they were made.
func TestGoodCorpusHasNoViolations(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	recs := corpusfix.Records()[:30]
	corpusfix.WriteRun(t, dir, recs, 7)
	rep := auditPath(t, Options{}, dir)
	if rep.Structure.Violations != 0 {
		t.Fatalf("violations in a good corpus: %+v", rep.Structure.Listed)
	}
	if len(rep.InputProblems) != 0 || len(rep.Damage()) != 0 {
		t.Errorf("problems in a good corpus: %v %v", rep.InputProblems, rep.Damage())
	}
	var items, valid, invalid int64
	for _, r := range recs {
		for _, it := range r.Rubric {
			items++
			switch {
			case it.Valid == nil:
			case *it.Valid:
				valid++
			default:
				invalid++
			}
		}
	}
	o := rep.Validity.Overall
	if o.Total != items || o.Valid != valid || o.Invalid != invalid || o.Unjudged != items-valid-invalid {
		t.Errorf("overall validity %+v; want %d items, %d valid, %d invalid", o, items, valid, invalid)
	}
	if rep.Empirical == nil || rep.Empirical.RecordsRecomputed != 30 {
		t.Errorf("empirical figures of 30 records with verdicts not recomputed: %+v", rep.Empirical)
	}
	if got := rep.Corpus.JobFingerprints; len(got) != 2 {
		t.Errorf("two job fingerprints were used, the report has %v", got)
	}
}

// TestJSONLExport audits a jsonl export of the fixture: the figures equal
// the run directory's, and a bad line and a cut-off last line are listed.
func TestJSONLExport(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()
	run := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, run, recs, 16)
	fromRun := auditPath(t, Options{}, run)

	dir := t.TempDir()
	writeJSONLExport(t, dir, recs)
	fromExport := auditPath(t, Options{}, dir)
	sameFigures(t, fromRun, fromExport)
	if fromExport.Corpus.Kind != KindExport || deref(fromExport.Corpus.ExportFormat) != "jsonl" {
		t.Errorf("corpus %+v", fromExport.Corpus)
	}

	bad := t.TempDir()
	writeJSONLExport(t, bad, recs, "{not json\n", `{"id": "cut", "rubric": [`)
	rep := auditPath(t, Options{}, bad)
	if len(rep.InputProblems) != 2 {
		t.Fatalf("input problems %+v; want the bad line and the cut-off last line", rep.InputProblems)
	}
	for i, wantLine := range []int64{int64(len(recs) + 1), int64(len(recs) + 2)} {
		p := rep.InputProblems[i]
		if p.Line != wantLine || !strings.HasSuffix(p.File, ".jsonl") {
			t.Errorf("problem %d at %s:%d, want line %d", i, p.File, p.Line, wantLine)
		}
	}
	if !strings.Contains(rep.InputProblems[1].Error, "cut short") {
		t.Errorf("the cut-off last line is not called so: %s", rep.InputProblems[1].Error)
	}
	if rep.Corpus.Records != int64(len(recs)) {
		t.Errorf("%d records read around the bad lines, want %d", rep.Corpus.Records, len(recs))
	}
}

// sameFigures compares the sections two reports of the same records share.
func sameFigures(t *testing.T, a, b *Report) {
	t.Helper()
	pairs := []struct {
		name string
		x, y any
	}{
		{"validity", a.Validity, b.Validity}, {"counts", a.Counts, b.Counts}, {"pitfall_bonus", a.PitfallBonus, b.PitfallBonus},
		{"pass_rates", a.PassRates, b.PassRates}, {"rollouts", a.Rollouts, b.Rollouts}, {"usage", a.Usage, b.Usage},
		{"empirical", a.Empirical, b.Empirical}, {"violations", a.Structure.ByRule, b.Structure.ByRule},
	}
	for _, p := range pairs {
		if !reflect.DeepEqual(p.x, p.y) {
			t.Errorf("%s differs:\n%+v\n%+v", p.name, p.x, p.y)
		}
	}
}

// TestVerlExport audits what a verl export's label column holds.
func TestVerlExport(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()
	run := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, run, recs, 16)
	fromRun := auditPath(t, Options{}, run)

	dir := t.TempDir()
	writeVerlExport(t, dir, recs, true)
	rep := auditPath(t, Options{}, dir)
	if rep.Corpus.Format != FormatVerl || rep.Corpus.Records != int64(len(recs)) {
		t.Fatalf("corpus %+v", rep.Corpus)
	}
	if !reflect.DeepEqual(rep.Validity, fromRun.Validity) || !reflect.DeepEqual(rep.Counts, fromRun.Counts) ||
		!reflect.DeepEqual(rep.PitfallBonus, fromRun.PitfallBonus) {
		t.Errorf("rubric figures differ from the run's")
	}
	if !reflect.DeepEqual(rep.Corpus.Splits, fromRun.Corpus.Splits) {
		t.Errorf("splits %v, the run has %v", rep.Corpus.Splits, fromRun.Corpus.Splits)
	}
	if rep.PassRates != nil || rep.Rollouts != nil || rep.Usage != nil || rep.Provenance != nil {
		t.Errorf("sections that need rollouts, usage or provenance are not null")
	}
	var sections []string
	for _, u := range rep.Unavailable {
		sections = append(sections, u.Section)
		if !strings.Contains(u.Reason, "runs/fixture") {
			t.Errorf("the reason does not name the source run: %s", u.Reason)
		}
	}
	for _, s := range []string{"pass_rates", "rollouts", "usage", "provenance"} {
		if !slices.Contains(sections, s) {
			t.Errorf("%s is not listed as unavailable: %v", s, sections)
		}
	}
	rubricRules := map[string]bool{}
	for _, rc := range fromRun.Structure.ByRule {
		// A label has no rollouts, and its "v" is the exporter's spec version.
		if !slices.Contains([]string{RuleRolloutCounts, RuleRolloutIndex, RuleSatisfaction, RuleEmpiricalMismatch, RuleSpecVersion}, rc.Rule) {
			rubricRules[rc.Rule] = true
		}
	}
	for _, rc := range rep.Structure.ByRule {
		delete(rubricRules, rc.Rule)
	}
	if len(rubricRules) > 0 {
		t.Errorf("rubric rules the run breaks but the verl export does not: %v", rubricRules)
	}
	text := string(render(t, rep.WriteText))
	if !strings.Contains(text, "--valid-only") || !strings.Contains(text, "Not available from this input") {
		t.Errorf("the text report does not say what the export cannot show:\n%s", text)
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(name, format string) string {
		dir := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(dir, "data"), 0o755)
		if format != "" {
			writeExport(t, dir, format, nil, false)
		}
		return dir
	}
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	other := filepath.Join(root, "notes.txt")
	os.WriteFile(other, []byte("hello"), 0o644)
	tests := []struct {
		name string
		path string
		is   error
		says []string
	}{
		{"rar export", mk("rar", "rar"), ErrNotAuditable, []string{`"rar" export`, `"jsonl" or "verl"`, "runs/fixture"}},
		{"srar-lines export", mk("lines", "srar-lines"), ErrNotAuditable, []string{`"srar-lines" export`, `"jsonl" or "verl"`}},
		{"unknown export format", mk("odd", "csv"), ErrNotAuditable, []string{`"csv"`}},
		{"export without export.json", mk("partial", ""), ErrIncomplete, []string{"export.json", "did not finish"}},
		{"empty directory", empty, ErrNotAuditable, []string{"neither a run directory"}},
		{"missing path", filepath.Join(root, "nope"), fs.ErrNotExist, []string{"nope"}},
		{"other file", other, ErrNotAuditable, []string{".parquet", ".jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.path)
			if !errors.Is(err, tt.is) {
				t.Fatalf("Open: %v; want %v", err, tt.is)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if IsUsage(err) != !errors.Is(tt.is, ErrIncomplete) {
				t.Errorf("IsUsage(%v) = %v", err, IsUsage(err))
			}
		})
	}
}

// TestOpenMixedFormats refuses to add verl rows to full records.
func TestOpenMixedFormats(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()[:5]
	run := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, run, recs, 16)
	verl := t.TempDir()
	writeVerlExport(t, verl, recs, false)
	if _, err := Open(run, verl); !errors.Is(err, ErrNotAuditable) {
		t.Errorf("Open(run, verl export): %v", err)
	}
	jsonl := t.TempDir()
	writeJSONLExport(t, jsonl, recs)
	rep := auditPath(t, Options{}, run, jsonl)
	if rep.Corpus.Records != 10 || rep.Damage() == nil {
		t.Errorf("the same records twice: %d records, damage %v", rep.Corpus.Records, rep.Damage())
	}
}
