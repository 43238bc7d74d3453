package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/schema"
)

func groundedJob(input string) job.Job {
	j := runtest.TestJob(input, "run", "http://127.0.0.1:1/v1")
	j.Style = schema.StyleGrounded
	j.Grounded.PassageChars = 200
	return j
}

// readAll reads a job's units and bad lines.
func readAll(t *testing.T, j job.Job) ([]source.Problem, []source.InputError) {
	t.Helper()
	var units []source.Problem
	var bad []source.InputError
	err := source.ReadUnits(context.Background(), source.SpecOf(&j), func(p source.Problem) error { units = append(units, p); return nil }, func(e *source.InputError) { bad = append(bad, *e) })
	if err != nil {
		t.Fatal(err)
	}
	return units, bad
}

// TestDocumentDirectory: a directory is read recursively; a file's path
// relative to it is its document id, a Markdown heading its title; a long
// document is cut into passages with ids id#0, id#1, ...; files that are
// not .txt/.md or are hidden are left out; a bad file is reported by name
// and skipped.
func TestDocumentDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	para := strings.Repeat("Heat flows from hot to cold bodies. ", 4) // 144 characters
	runtest.WriteFile(t, filepath.Join(dir, "a.txt"), "Short text about lasers.\n")
	runtest.WriteFile(t, filepath.Join(dir, "sub", "deep", "b.md"), "# Thermal notes\n\n"+para+"\n\n"+para+"\n")
	runtest.WriteFile(t, filepath.Join(dir, "sub", "image.pdf"), "%PDF-1.4")
	runtest.WriteFile(t, filepath.Join(dir, ".hidden", "c.txt"), "hidden")
	runtest.WriteFile(t, filepath.Join(dir, "bad.txt"), "caf\xe9\n")
	runtest.WriteFile(t, filepath.Join(dir, "empty.md"), "  \n")
	units, bad := readAll(t, groundedJob(dir))
	var ids []string
	for _, u := range units {
		ids = append(ids, u.ID)
		if u.DocHash != source.ContentHash(u.Text) || u.Answer != "" || u.File == "" {
			t.Errorf("unit %s: hash %s, answer %q, file %q", u.ID, u.DocHash, u.Answer, u.File)
		}
	}
	want := []string{"a.txt#0", "sub/deep/b.md#0", "sub/deep/b.md#1"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("ids %q, want %q", ids, want)
	}
	if len(units) == 3 && (units[1].Title != "Thermal notes" || units[1].DocID != "sub/deep/b.md" || units[2].PassageIndex != 1) {
		t.Errorf("passage fields: %+v", units[1:])
	}
	if len(bad) != 2 || !strings.Contains(bad[0].Error(), "bad.txt: not valid UTF-8") || !strings.Contains(bad[1].Error(), "empty.md: empty document") {
		t.Errorf("bad files: %v", bad)
	}
	if n, err := source.CountRows(context.Background(), source.SpecOf(ptr(groundedJob(dir)))); err != nil || n != 3 {
		t.Errorf("counted %d passages (%v), want 3", n, err)
	}
}

// TestDocumentRows: JSONL rows with a mapped text and id field are
// documents; a bad row is reported by file and line and skipped; a row
// without an id gets its content hash as document id.
func TestDocumentRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "docs.jsonl")
	runtest.WriteFile(t, path, `{"body": "First document.", "doc_id": "d1", "title": "One", "source": "osti"}
{"doc_id": "d2"}
not json
{"body": "Second document."}
`)
	j := groundedJob(path)
	j.Input.Fields.Text, j.Input.Fields.ID = "body", "doc_id"
	units, bad := readAll(t, j)
	if len(units) != 2 || units[0].ID != "d1#0" || units[0].Title != "One" || units[0].Source != "osti" ||
		units[1].DocID != source.ContentHash("Second document.") || units[1].Line != 4 {
		t.Errorf("units: %+v", units)
	}
	if len(bad) != 2 || bad[0].Line != 2 || !strings.Contains(bad[0].Reason, `missing field "body"`) || bad[1].Line != 3 {
		t.Errorf("bad lines: %+v", bad)
	}

	type row struct {
		Body string `parquet:"body"`
		ID   int64  `parquet:"doc_id"`
	}
	pq := filepath.Join(dir, "docs.parquet")
	if err := parquet.WriteFile(pq, []row{{"A parquet document.", 7}, {"", 8}}); err != nil {
		t.Fatal(err)
	}
	j.Input.Paths = []string{pq}
	units, bad = readAll(t, j)
	if len(units) != 1 || units[0].ID != "7#0" || len(bad) != 1 || bad[0].Line != 2 {
		t.Errorf("parquet: units %+v, bad %+v", units, bad)
	}
}

// TestDocumentInputEntirelyWrong: an input that holds no document stops
// the run before it starts, saying what it holds.
func TestDocumentInputEntirelyWrong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pdfs := filepath.Join(dir, "pdfs")
	runtest.WriteFile(t, filepath.Join(pdfs, "x.pdf"), "%PDF")
	runtest.WriteFile(t, filepath.Join(pdfs, "y.pdf"), "%PDF")
	runtest.WriteFile(t, filepath.Join(pdfs, "z.html"), "<p>")
	rows := filepath.Join(dir, "rows.jsonl")
	runtest.WriteFile(t, rows, `{"content": "a"}`+"\n"+`{"content": "b"}`+"\n")
	binary := filepath.Join(dir, "bin")
	runtest.WriteFile(t, filepath.Join(binary, "a.txt"), "\x00\x01\x02binary")
	for _, tc := range []struct {
		path string
		want []string
	}{
		{pdfs, []string{"holds no .md, .markdown, .mdx, .rst, .txt or .text files", "1 .html, 2 .pdf"}},
		{rows, []string{"none of its first 2 lines holds a usable document", `"content"`, "--field-text"}},
		{binary, []string{"none of its first 1 document files holds usable text", "binary data"}},
		{filepath.Join(dir, "missing"), []string{"does not exist"}},
	} {
		j := groundedJob(tc.path)
		j.Out = filepath.Join(dir, "run")
		_, err := Run(context.Background(), j, Options{HTTPClient: runtest.InProcess})
		var ue *job.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: %v, want a usage error", tc.path, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error does not say %q:\n%v", tc.path, w, err)
			}
		}
	}
}
