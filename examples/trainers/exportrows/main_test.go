package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

func writeExport(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	r, err := corpus.Open(filepath.Join(dir, "run"), corpus.Options{ToolVersion: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i, split := range []string{"train", "validation", "train", "test"} {
		rec := schema.Record{
			ID: strings.Repeat(string(rune('a'+i)), 16), Split: split, Style: schema.StyleSRaR, Problem: "Problem <" + split + ">", Answer: "42",
			Rubric: []schema.Item{
				{ID: 1, Type: schema.TypeSuggest, Text: "Does the step.", Weight: 1, Polarity: 1},
				{ID: 2, Type: schema.TypeAnswer, Text: "Answers 42.", Weight: 1, Polarity: 1},
			},
			Provenance: schema.Provenance{SpecVersion: schema.SpecVersion, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		}
		if err := r.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "export")
	_, err = corpus.Export(context.Background(), filepath.Join(dir, "run"), corpus.ExportOptions{Format: corpus.FormatVerl, Out: out, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPrintsTheRowsATrainerReads(t *testing.T) {
	out := writeExport(t)
	m, err := corpus.ReadExportManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	var want []corpus.VerlRow
	for _, f := range m.Files {
		if err := corpus.Scan(filepath.Join(out, f.File), func(r *corpus.VerlRow) error { want = append(want, *r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		rows int
	}{{[]string{out}, 4}, {[]string{"-split", "train", out}, 2}} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != tc.rows {
			t.Fatalf("%v: %d lines, want %d", tc.args, len(lines), tc.rows)
		}
		for i, line := range lines {
			var row corpus.VerlRow
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, want[i]) {
				t.Errorf("line %d: %+v, want %+v", i, row, want[i])
			}
		}
		if !strings.Contains(stdout.String(), `"content":"Problem <train>"`) {
			t.Errorf("HTML characters are escaped: %s", lines[0])
		}
	}
}

func TestExitCodes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(nil, &stdout, &stderr); code != 2 {
		t.Errorf("no arguments: exit %d", code)
	}
	if code := run([]string{t.TempDir()}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "export.json") {
		t.Errorf("not an export: exit %d, %s", code, stderr.String())
	}
}
