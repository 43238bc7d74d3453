package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// indexRecord is a small complete record with rollouts.
func indexRecord(i int, rubric []schema.Item) schema.Record {
	return schema.Record{
		ID: "rec-" + string(rune('a'+i)), Source: "tests", Split: "train", Problem: "Problem number " + string(rune('a'+i)) + "?",
		Answer: "42", Style: schema.StyleSRaR, Rubric: rubric,
		Rollouts:   []schema.Rollout{{Index: 0, Text: strings.Repeat("long rollout text ", 100), Correct: true, FinishReason: "stop"}},
		Provenance: schema.Provenance{SpecVersion: schema.SpecVersion, CreatedAt: time.UnixMilli(1_780_000_000_000).UTC()},
	}
}

func writeRun(t testing.TB, dir string, recs []schema.Record) {
	t.Helper()
	run, err := corpus.Open(dir, corpus.Options{ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := run.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
}

// exportRow has a few of the verl export's columns, the label among them.
type exportRow struct {
	DataSource string `parquet:"data_source"`
	Label      string `parquet:"label"`
	Solution   string `parquet:"solution"`
}

func writeParquet[T any](t testing.TB, path string, rows []T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadIndex(t *testing.T) {
	t.Parallel()
	rubric := rewardtest.SRaRItems()
	valid := true
	rubric[0].EmpiricalValid = &valid
	recs := []schema.Record{indexRecord(0, rubric), indexRecord(1, rubric[:2]), indexRecord(2, nil)}
	want := map[string]schema.Label{}
	for i := range recs[:2] {
		want[recs[i].ID] = schema.LabelOf(&recs[i])
	}
	base := t.TempDir()

	runDir := filepath.Join(base, "run")
	writeRun(t, runDir, recs)

	verl := filepath.Join(base, "verl")
	var rows []exportRow
	for _, id := range []string{"rec-a", "rec-b"} {
		rows = append(rows, exportRow{DataSource: "rubricforge/tests", Label: labelJSON(t, want[id]), Solution: "42"})
	}
	rows = append(rows, exportRow{Label: `{"id": "broken", "rubric": []}`})
	writeParquet(t, filepath.Join(verl, "data", "train-00000-of-00001.parquet"), rows)
	writeFile(t, filepath.Join(verl, "export.json"), `{"format": "verl", "spec_version": "2"}`)

	jsonl := filepath.Join(base, "jsonl")
	var lines []string
	for _, r := range recs {
		b, _ := json.Marshal(r)
		lines = append(lines, string(b))
	}
	writeFile(t, filepath.Join(jsonl, "data", "train-00000-of-00001.jsonl"), strings.Join(lines, "\n")+"\n\nnot json\n")
	writeFile(t, filepath.Join(jsonl, "export.json"), `{"format": "jsonl"}`)

	shards, err := corpus.Shards(runDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		records int
		skipped int
	}{
		{"run directory", runDir, 3, 1},
		{"verl export", verl, 3, 1},
		{"jsonl export", jsonl, 4, 2},
		{"one shard", shards[0], 3, 1},
		{"one export file", filepath.Join(verl, "data", "train-00000-of-00001.parquet"), 3, 1},
	} {
		x, st, err := LoadIndex(tc.path, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if st.Records != tc.records || st.Skipped != tc.skipped || st.Loaded != 2 || x.Len() != 2 {
			t.Errorf("%s: stats %+v, want %d records, %d skipped, 2 loaded", tc.name, st, tc.records, tc.skipped)
		}
		for id, w := range want {
			got, ok := x.ByID(id)
			if !ok || labelJSON(t, *got) != labelJSON(t, w) {
				t.Errorf("%s: label %s = %v, want %s", tc.name, id, got, labelJSON(t, w))
			}
		}
		if l, ok, _ := x.ByText("  Problem number b? "); !ok || l.ID != "rec-b" {
			t.Errorf("%s: by text: %v %v", tc.name, l, ok)
		}
	}

	noLabel := filepath.Join(base, "rar")
	writeParquet(t, filepath.Join(noLabel, "data", "train-00000-of-00001.parquet"), []struct {
		Question string `parquet:"question"`
	}{{"q"}})
	writeFile(t, filepath.Join(noLabel, "export.json"), `{"format": "rar"}`)
	incomplete := filepath.Join(base, "incomplete")
	writeParquet(t, filepath.Join(incomplete, "data", "train-00000-of-00001.parquet"), rows)
	for _, tc := range []struct{ path, msg string }{
		{noLabel, `format "rar"`},
		{noLabel, "no column reference_answer"},
		{incomplete, "no export.json"},
		{filepath.Join(base, "missing"), "no such file"},
		{filepath.Join(jsonl, "export.json"), "not a Parquet file"},
	} {
		if _, _, err := LoadIndex(tc.path, nil); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("LoadIndex(%s) = %v, want an error saying %q", tc.path, err, tc.msg)
		}
	}
}
