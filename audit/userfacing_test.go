package audit

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"go/build"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/schema"
)

// TestDuplicateAfterBadLine: a repeated id after a line that does not parse
// is reported at its own row, not one row early.
func TestDuplicateAfterBadLine(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()[:3]
	var b bytes.Buffer
	for _, k := range []int{0, 1} {
		line, _ := json.Marshal(&recs[k])
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteString("{not json\n")    // row 3
	for _, k := range []int{2, 0} { // rows 4 and 5: row 5 repeats row 1's id
		line, _ := json.Marshal(&recs[k])
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "records.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := auditPath(t, Options{List: -1}, path)
	var found bool
	for _, v := range rep.Structure.Listed {
		if v.Rule == RuleDuplicateID {
			found = true
			if v.Row != 5 || v.RecordID != recs[0].ID {
				t.Errorf("duplicate reported at row %d (%s); it is on row 5 (%s)", v.Row, v.RecordID, recs[0].ID)
			}
		}
	}
	if !found {
		t.Fatalf("the repeated id is not reported: %+v", rep.Structure.Listed)
	}
}

// TestSheetEscapesFormulas: a cell a spreadsheet would run as a formula is
// written with a leading quote, and reading the sheet back gives the text
// as it is in the corpus, so agreement still matches the items.
func TestSheetEscapesFormulas(t *testing.T) {
	t.Parallel()
	texts := []string{"=HYPERLINK(\"http://x\")", "'=quoted already", "+1 for the sign", "-3 is the root", "@SUM(A1)", "\tTab first", "plain"}
	var items []SampleItem
	for i, s := range texts {
		items = append(items, SampleItem{RecordID: "r1", ItemID: int32(i + 1), Type: schema.TypeSuggest, Text: s, Problem: "-x = 2", Answer: "=2"})
	}
	var b bytes.Buffer
	if err := WriteSheet(&b, items); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows[1:] {
		for c, cell := range row {
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				t.Errorf("column %s cell %q starts with a formula character", sheetColumns[c], cell)
			}
		}
	}
	// filled in and read back: the texts compare equal to the corpus's
	for _, row := range rows[1:] {
		row[7] = "valid"
	}
	var filled bytes.Buffer
	csv.NewWriter(&filled).WriteAll(rows)
	anns, err := ReadSheet(&filled, "items.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range anns {
		if !sameText(a.Text, texts[i]) {
			t.Errorf("row %d reads back as %q, the item is %q", i+1, a.Text, texts[i])
		}
	}
}

var _ = context.Background
var _ = errors.Is

// TestMaxItemsFromJobHistory: the SRaR item limit checked is the one the
// run's jobs used, as the manifest's job history records it (corpus owns
// the run directory); a job.yaml saying otherwise does not decide it.
func TestMaxItemsFromJobHistory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	var recs []schema.Record
	for i := range 12 {
		recs = append(recs, corpusfix.Record(i, schema.StyleSRaR, nil, func(r *schema.Record) { r.Provenance.JobFingerprint = "fp-six" }))
	}
	r, err := corpus.Open(dir, corpus.Options{ShardRows: 5, ToolVersion: "test", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	r.SetJob("fp-six", map[string]string{"distill.max_items": "6", "style": "srar"})
	for k := range recs {
		if err := r.Append(&recs[k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, corpus.JobName), []byte("distill: {max_items: 12}\n"), 0o644)
	var over int64
	for _, rec := range recs {
		if len(rec.Rubric) > 6 {
			over++
		}
	}
	rep := auditPath(t, Options{}, dir)
	got := int64(0)
	for _, rc := range rep.Structure.ByRule {
		if rc.Rule == schema.RuleTooManyItems {
			got = rc.Records
		}
	}
	if rep.Structure.MaxItems != 6 || got != over || over == 0 {
		t.Errorf("item limit %d with %d records over it; the job ran with 6, and %d records have more", rep.Structure.MaxItems, got, over)
	}
}

// TestReadsRunsThroughCorpus: audit reads run directories through corpus,
// the owner of their layout, not through pipeline's run loop and job file.
func TestReadsRunsThroughCorpus(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasSuffix(imp, "/pipeline") {
			t.Errorf("audit imports %s", imp)
		}
	}
}

// TestRenderUncomputable: the text and HTML reports render when figures
// are null: no rollouts, no items, no token counts, a verl
// export.
func TestRenderUncomputable(t *testing.T) {
	t.Parallel()
	bare := func(r *schema.Record) {
		r.Rollouts, r.NCorrect, r.PassRate = nil, 0, 0
		r.Rubric = []schema.Item{}
	}
	noTokens := func(r *schema.Record) {
		for k := range r.Rollouts {
			r.Rollouts[k].CompletionTokens = nil
		}
	}
	dirs := map[string]string{}
	for name, edit := range map[string]func(*schema.Record){"bare": bare, "no tokens": noTokens} {
		var recs []schema.Record
		for i := range 5 {
			recs = append(recs, corpusfix.Record(i, schema.StyleSRaR, nil, edit))
		}
		dirs[name] = filepath.Join(t.TempDir(), "run")
		corpusfix.WriteRun(t, dirs[name], recs, 4)
	}
	dirs["verl"] = t.TempDir()
	writeVerlExport(t, dirs["verl"], corpusfix.Records()[:6], false)
	for name, dir := range dirs {
		rep := auditPath(t, Options{}, dir)
		for what, write := range map[string]func(io.Writer) error{"text": rep.WriteText, "HTML": rep.WriteHTML, "JSON": rep.WriteJSON} {
			if err := write(io.Discard); err != nil {
				t.Errorf("%s: the %s report does not render: %v", name, what, err)
			}
		}
	}
}
