package server

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestLoadEveryExportFormat exports one corpus in every format distill
// export writes and loads each export, and one data file of each, with
// --corpus: every format gives the same rubrics.
func TestLoadEveryExportFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	var recs []schema.Record
	for i := range 4 {
		items := rewardtest.SRaRItems()
		for j := range items {
			items[j].Text += fmt.Sprintf(" %d", j) // srar-lines keeps one of two items with the same type and text
		}
		recs = append(recs, indexRecord(i, items))
	}
	writeRun(t, run, recs)
	for _, format := range corpus.ExportFormats {
		out := filepath.Join(dir, format)
		if _, err := corpus.Export(context.Background(), run, corpus.ExportOptions{Format: format, Out: out}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		files, _ := filepath.Glob(filepath.Join(out, "data", "*"))
		for _, path := range []string{out, files[0]} {
			x, st, err := LoadIndex(path, nil)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			if x.Len() != len(recs) || st.Skipped != 0 {
				t.Errorf("%s: %d problems, %d skipped; want %d", path, x.Len(), st.Skipped, len(recs))
				continue
			}
			for _, rec := range recs {
				l, ok := x.ByID(rec.ID)
				if !ok || l.Question != rec.Problem || l.GroundTruth != rec.Answer || l.Style != schema.StyleSRaR || !sameItems(l.Rubric, rec.Rubric) {
					t.Errorf("%s: %s loaded as %+v", path, rec.ID, l)
				}
			}
		}
	}
}

func sameItems(a, b []schema.Item) bool {
	return slices.EqualFunc(a, b, func(x, y schema.Item) bool {
		return x.ID == y.ID && x.Type == y.Type && x.Text == y.Text && x.Weight == y.Weight && reward.Polarity(x) == reward.Polarity(y)
	})
}

// TestLoadRefusesWhatIsNotACorpus checks that rewardd does not start on a
// file with no rubric (a problems file, an empty file), and that an export
// it cannot read names the formats it can.
func TestLoadRefusesWhatIsNotACorpus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	problems := filepath.Join(dir, "problems.jsonl")
	writeFile(t, problems, `{"problem": "What is 2+3?", "answer": "5"}`+"\n"+`{"problem": "What is 7+8?", "answer": "15"}`+"\n")
	empty := filepath.Join(dir, "empty.jsonl")
	writeFile(t, empty, "")
	odd := filepath.Join(dir, "odd")
	writeFile(t, filepath.Join(odd, corpus.ExportManifestName), `{"format": "alpaca"}`)
	for path, says := range map[string]string{
		problems: "no rubric loaded",
		empty:    "no rubric loaded",
		odd:      "verl, rar, srar-lines, jsonl",
	} {
		_, _, err := LoadIndex(path, nil)
		if err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want an error naming the path and %q", path, err, says)
		}
	}
}

// TestRaRSignedWeights: a rar item's weight sign is its polarity: a
// negative FACTUAL criterion counts against the response, a PITFALL is -1
// whatever its sign.
func TestRaRSignedWeights(t *testing.T) {
	t.Parallel()
	row := corpus.RaRRow{ID: "p1", Question: "Q?", ReferenceAnswer: "5", Rubric: []corpus.RaRItem{
		{Title: "Factual", Description: "States 5.", Weight: 3},
		{Title: "Factual", Description: "States 7.", Weight: -2},
		{Title: "Pitfall", Description: "Divides by zero.", Weight: 0.5},
		{Title: "Pitfall", Description: "Multiplies.", Weight: -0.8},
	}}
	rec, err := rarRecord(&row)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		weight   float64
		polarity int32
	}{{3, 1}, {2, -1}, {0.5, -1}, {0.8, -1}}
	for i, it := range rec.Rubric {
		if it.Weight != want[i].weight || reward.Polarity(it) != want[i].polarity {
			t.Errorf("item %d: weight %v polarity %d, want %v %d", i, it.Weight, reward.Polarity(it), want[i].weight, want[i].polarity)
		}
	}
}
