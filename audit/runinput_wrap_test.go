package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestRunInputLinesAreNotCut: what a run's corpus does not hold is said in
// full in the text report, wrapped at its width, never cut with "…" (on a
// real documentation set the skipped files' kinds and the meaning of "no
// training signal" were cut off at 100 columns).
func TestRunInputLinesAreNotCut(t *testing.T) {
	t.Parallel()
	recs := []schema.Record{groundedRecord(1, 1)}
	for k := range recs[0].Grounded.Questions[0].Criteria {
		recs[0].Grounded.Questions[0].Criteria[k].Varies = ptr(k < 2)
	}
	run := groundedRun(t, recs)
	report := `{"status": "finished", "style": "grounded",
 "problems": {"input_lines": 1580, "input_rows": 1580, "unique": 1580, "done": 1450, "left_out": 130},
 "left_out_by_stage": {"passage": 30, "quality": 100},
 "duplicate_documents_total": 12,
 "skipped_files": {"files": 8, "by_extension": [{"ext": ".py", "files": 2}, {"ext": "", "files": 2}, {"ext": ".bat", "files": 1}, {"ext": ".css", "files": 1}, {"ext": ".html", "files": 1}, {"ext": ".png", "files": 1}], "examples": ["Makefile"]}}`
	if err := os.WriteFile(filepath.Join(run, "report.json"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	text := string(render(t, auditPath(t, Options{}, run).WriteText))
	flat := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{
		"skipped 8 files that are not documents (2 .py, 2 with no extension, 1 .bat, 1 .css, 1 .html, 1 .png); 12 duplicate documents",
		"(60.0%): every closed-book answer scored them alike",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the text report does not say %q in full:\n%s", want, text[:min(len(text), 1500)])
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if (strings.Contains(l, "skipped") || strings.Contains(l, "no training signal")) && strings.Contains(l, "…") {
			t.Errorf("line cut: %q", l)
		}
	}
}
