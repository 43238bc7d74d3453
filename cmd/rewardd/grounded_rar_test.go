package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/cmd/rewardd/internal/server"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroundedRaRExportIsServed: a rar export of a grounded corpus (each
// question's criteria as {title: name, description, weight}, its passage
// as reference_answer), which docs/rewardd.md says rewardd serves, loads
// as grounded questions with their passage and criteria, and the log
// counts questions, not problems (issue 43, item 10: every row was skipped).
func TestGroundedRaRExportIsServed(t *testing.T) {
	t.Parallel()
	run, recs := groundedCorpus(t)
	export := filepath.Join(t.TempDir(), "rar")
	if _, err := corpus.Export(context.Background(), run, corpus.ExportOptions{Format: corpus.FormatRaR, Out: export, ToolVersion: "test", Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	x, stats, err := server.LoadIndex(export, nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.Len() != 3 || stats.Skipped != 0 {
		t.Fatalf("LoadIndex(rar export): %d questions, %+v, %v; want 3", x.Len(), stats, err)
	}
	lab, ok := x.ByID(schema.QuestionID(recs[0].ID, 0))
	if !ok || lab.Scheme != schema.SchemeGrounded || lab.Grounded == nil || lab.Grounded.Passage != raftPassage || len(lab.Grounded.Criteria) != 3 ||
		lab.Grounded.Criteria[0].Name != "one vote per term" || lab.Grounded.Criteria[0].Weight != 4 {
		t.Fatalf("question 0 of the rar export: %+v", lab)
	}
	var log bytes.Buffer
	logLoaded(slog.New(slog.NewTextHandler(&log, nil)), export, stats, 0)
	if strings.Contains(log.String(), "problems=") || !strings.Contains(log.String(), "questions=3") {
		t.Errorf("the log counts a grounded corpus's questions as problems: %s", log.String())
	}
}
