package audit

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroundedVerlExportIsGrounded: a verl export of a grounded corpus,
// the file people train on, is reported as the grounded corpus it is, in
// text and JSON: rubric kind grounded, its questions and criteria on the
// corpus line, no math sections ("0 rubric items", empty validity tables,
// "SRaR item limit 12"), each named in unavailable (issue 43, item 1).
func TestGroundedVerlExportIsGrounded(t *testing.T) {
	t.Parallel()
	run := groundedRun(t, []schema.Record{groundedRecord(1, 2), groundedRecord(2, 1)})
	out := filepath.Join(t.TempDir(), "verl")
	if _, err := corpus.Export(context.Background(), run, corpus.ExportOptions{Format: corpus.FormatVerl, Out: out, ToolVersion: "test", Logger: quiet()}); err != nil {
		t.Fatal(err)
	}
	rep := auditPath(t, Options{}, out)
	if rep.Corpus.RubricKind != RubricGrounded || rep.Validity != nil || rep.Counts != nil || rep.PitfallBonus != nil {
		t.Errorf("rubric kind %q, validity %v, counts %v, co-occurrence %v; want grounded with no math sections",
			rep.Corpus.RubricKind, rep.Validity, rep.Counts, rep.PitfallBonus)
	}
	var names []string
	for _, u := range rep.Unavailable {
		names = append(names, u.Section)
	}
	for _, s := range []string{"validity", "counts", "pitfall_bonus"} {
		if !slices.Contains(names, s) {
			t.Errorf("unavailable %q does not name %s", names, s)
		}
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, bad := range []string{"rubric items", "SRaR item limit", "Validity by type"} {
		if strings.Contains(text, bad) {
			t.Errorf("the text report of a grounded verl export says %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "Grounded records: 3 rows of a verl export (one a question), 15 criteria") || strings.Contains(text, "3 passages") {
		t.Errorf("the grounded section calls a verl export's rows passages:\n%s", text)
	}
	if !strings.Contains(text, "3 questions, 15 criteria") {
		t.Errorf("the corpus line does not count questions and criteria:\n%s", text[:min(len(text), 400)])
	}
}

// TestOffScaleWeightsAreFlagged: a criterion weight outside the 1-5 scale
// the synthesis template asks for (5.5, 0.5) is a criterion_weight
// violation that names the scale, in a run directory and a verl export
// (issue 43, item 10: weights of 5.5 passed unflagged).
func TestOffScaleWeightsAreFlagged(t *testing.T) {
	t.Parallel()
	rec := groundedRecord(1, 1)
	rec.Grounded.Questions[0].Criteria[0].Weight = 5.5
	rec.Grounded.Questions[0].Criteria[4].Weight = 0.5
	rep := auditPath(t, Options{}, groundedRun(t, []schema.Record{rec, groundedRecord(3, 1)}))
	var details []string
	for _, v := range rep.Structure.Listed {
		if v.Rule == RuleCriterionWeight {
			details = append(details, v.Detail)
		}
	}
	if len(details) != 2 || !strings.Contains(details[0], "weight 5.5, outside the 1-5 scale") || !strings.Contains(details[1], "weight 0.5, outside the 1-5 scale") {
		t.Errorf("criterion_weight violations %q; want the two off-scale weights named with the scale", details)
	}
}
