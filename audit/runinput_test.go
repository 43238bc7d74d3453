package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestRunInputLossesInEveryFormat: validate on a run directory says what
// of the input the corpus does not hold, from the run's report.json:
// units left out (with their share and stages), failed, duplicates, bad
// lines, duplicate documents and files skipped as no documents; and the
// share of grounded criteria with no training signal leads the report
// instead of a footnote. Text, JSON and HTML alike (issue 43, item 5).
func TestRunInputLossesInEveryFormat(t *testing.T) {
	t.Parallel()
	recs := []schema.Record{groundedRecord(1, 1), groundedRecord(2, 1)}
	for i := range recs {
		for k, c := range recs[i].Grounded.Questions[0].Criteria {
			recs[i].Grounded.Questions[0].Criteria[k].Varies = ptr(k < 2) // 3 of 5 constant
			_ = c
		}
	}
	run := groundedRun(t, recs)
	report := `{"status": "finished", "style": "grounded",
 "problems": {"input_lines": 9, "input_rows": 8, "bad_lines": 1, "duplicates": 2, "unique": 6, "done": 2, "failed": 1, "left_out": 3, "pending": 0},
 "left_out_by_stage": {"passage": 2, "quality": 1},
 "duplicate_documents_total": 1,
 "skipped_files": {"files": 57, "by_extension": [{"ext": ".png", "files": 55}, {"ext": ".gotmpl", "files": 2}], "examples": ["a.png"]},
 "llm": {"total": {"requests": 10, "cache_hits": 1}}}`
	if err := os.WriteFile(filepath.Join(run, "report.json"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := auditPath(t, Options{}, run)
	text := string(render(t, rep.WriteText))
	for _, want := range []string{
		"input: 6 unique passages of 8 rows (2 duplicates, 1 unusable document)\n    2 in the corpus, 3 left out (50.0%: passage=2 quality=1), 1 failed, 0 pending",
		"skipped 57 files that are not documents (55 .png, 2 .gotmpl); 1 duplicate document",
		"criteria with no training signal: 6 of 10 measured (60.0%)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text report does not say %q:\n%s", want, text[:min(len(text), 1200)])
		}
	}
	if strings.Index(text, "no training signal") > strings.Index(text, "Grounded records") {
		t.Error("the share of criteria with no training signal comes after the grounded tables, not at the top")
	}
	var js struct {
		RunInput *struct {
			Unique, LeftOut, Failed, Duplicates, BadLines int64
			LeftOutShare                                  *float64     `json:"left_out_share"`
			LeftOutByStage                                []StageCount `json:"left_out_by_stage"`
			DuplicateDocuments                            int64        `json:"duplicate_documents"`
			SkippedFiles                                  *struct {
				Files int64 `json:"files"`
			} `json:"skipped_files"`
		} `json:"run_input"`
		Grounded struct {
			NoSignalShare *float64 `json:"no_signal_share"`
		} `json:"grounded"`
	}
	if err := json.Unmarshal(render(t, rep.WriteJSON), &js); err != nil {
		t.Fatal(err)
	}
	ri := js.RunInput
	if ri == nil || ri.LeftOutShare == nil || *ri.LeftOutShare != 0.5 || len(ri.LeftOutByStage) != 2 || ri.LeftOutByStage[0] != (StageCount{"passage", 2}) || ri.DuplicateDocuments != 1 ||
		ri.SkippedFiles == nil || ri.SkippedFiles.Files != 57 {
		t.Errorf("JSON run_input %+v", ri)
	}
	if s := js.Grounded.NoSignalShare; s == nil || *s != 0.6 {
		t.Errorf("JSON grounded.no_signal_share %v, want 0.6", s)
	}
	html := string(render(t, rep.WriteHTML))
	for _, want := range []string{"left out (50.0%)", "files skipped", "no training signal"} {
		if !strings.Contains(html, want) {
			t.Errorf("the HTML report does not say %q", want)
		}
	}
}
