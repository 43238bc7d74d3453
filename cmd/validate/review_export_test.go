package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewexport"
	"github.com/rubricforge/rubricforge/review"
	"github.com/rubricforge/rubricforge/schema"
)

// exportReviewed exports run with alice's log as `distill export --review`
// does (corpus.Export with the review's applier) and reads the exported
// parquet back: the edit is in it and the rejected item is not. That
// rewardd scores such an export with the edited rubric is
// TestServesAReviewedExport in cmd/rewardd/internal/server (rewardd's
// service is internal to cmd/rewardd).
func exportReviewed(t *testing.T, run, recordID, edited string) {
	t.Helper()
	entries := readLog(t, run)
	var rejected, before string
	for _, e := range entries {
		if e.Record == recordID && e.Action == review.ActionReject {
			rejected = e.Before.Text
		}
		if e.Record == recordID && e.Action == review.ActionEdit {
			before = e.Before.Text
		}
	}
	if rejected == "" || before == "" {
		t.Fatalf("the log lacks the reject or the edit of record %s: %+v", recordID, entries)
	}
	out := filepath.Join(t.TempDir(), "export")
	m, err := reviewexport.Verl(context.Background(), run, out, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Review; r == nil || r.ItemsRejected < 1 || r.ItemsEdited != 1 || len(r.Reviewers) != 1 || r.Reviewers[0].Reviewer != "alice" {
		t.Fatalf("export.json's review section: %+v", m.Review)
	}

	rubric := exportedRubric(t, out, recordID)
	var texts []string
	for _, it := range rubric {
		texts = append(texts, it.Text)
	}
	joined := strings.Join(texts, "\n")
	if !strings.Contains(joined, edited) || strings.Contains(joined, rejected) || strings.Contains(joined, before) {
		t.Fatalf("the exported rubric of %s is:\n%s\nwant %q in it and neither %q nor %q", recordID, joined, edited, rejected, before)
	}
}

// exportedRubric reads the rubric of record id from the verl export's
// parquet label column.
func exportedRubric(t *testing.T, out, id string) []schema.Item {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "data", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no parquet in %s: %v", out, err)
	}
	var found []schema.Item
	for _, f := range files {
		err := corpus.Scan(f, func(r *corpus.VerlRow) error {
			l, err := schema.ParseLabel([]byte(r.Label))
			if err != nil {
				return err
			}
			if l.ID == id {
				found = l.Rubric
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == nil {
		t.Fatalf("record %s is not in the export", id)
	}
	return found
}
