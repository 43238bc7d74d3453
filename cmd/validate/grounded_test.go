package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroundedCorpus: validate audits a corpus of grounded records (one
// copying its passage, one criterion judged invalid) with their own rules
// and section, in text and JSON.
func TestGroundedCorpus(t *testing.T) {
	t.Parallel()
	dir := writeGroundedRun(t)
	code, stdout, stderr := validate(t, nil, dir, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep audit.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	g := rep.Grounded
	if g == nil || g.Questions != 2 || g.Criteria != 4 || g.Copying != 1 || g.Validity.Invalid != 1 || rep.Structure.Violations != 0 {
		t.Fatalf("grounded section %+v, %d violations", g, rep.Structure.Violations)
	}
	code, stdout, _ = validate(t, nil, dir)
	if code != exitOK || !strings.Contains(stdout, "Grounded records: 2 passages, 2 questions, 4 criteria") {
		t.Errorf("text report (exit %d) lacks the grounded section:\n%s", code, stdout)
	}
}

// writeGroundedRun writes two grounded records, four criteria of which
// three are judged valid, as a run directory.
func writeGroundedRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := corpus.Open(dir, corpus.Options{ShardRows: 10, ToolVersion: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{"Why can two candidates not both become leader in one term?", "Explain how a candidate becomes leader once a majority of the servers grant it their vote."} {
		rec := groundedRecord(i, q, i == 0)
		if err := w.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// groundedRecord is a passage record with one question of two criteria,
// the second judged valid when secondValid.
func groundedRecord(i int, question string, secondValid bool) schema.Record {
	passage := "Raft elects a leader for each term. A candidate becomes leader once a majority of the servers grant it their vote."
	crit := func(id string, w float64, valid bool) schema.Criterion {
		return schema.Criterion{ID: id, Weight: w, Name: "criterion " + id, Description: "Explains " + id + ".", RequiredElements: []string{id},
			ScoringGuide: "g", VerificationMethod: "v", ExpectedKeywords: []string{id}, ExpectedConcepts: []string{id}, Valid: &valid}
	}
	return schema.Record{ID: fmt.Sprintf("7c7c7c7c7c7c7c%02d", i), Split: "train", Style: schema.StyleGrounded,
		Provenance: schema.Provenance{SpecVersion: schema.SpecVersion, ToolVersion: "test", CreatedAt: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)},
		Grounded: &schema.Grounded{DocID: "raft.md", PassageID: "raft.md#0", Passage: passage, DocHash: "0011223344556677",
			Analysis:  schema.Analysis{Genre: "tutorial", Depth: "intermediate", ReasoningMode: "causal"},
			Questions: []schema.GroundedQuestion{{Question: question, Criteria: []schema.Criterion{crit("a", 3, true), crit("b", 2, secondValid)}}}}}
}
