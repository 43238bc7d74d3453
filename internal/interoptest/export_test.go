package interoptest

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// exportCorpus writes n generated records over three splits as a run
// directory and returns them by id.
func exportCorpus(t *testing.T, dir string, n int) map[string]schema.Record {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	r, err := corpus.Open(dir, corpus.Options{ShardRows: 40, ToolVersion: "interop", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]schema.Record{}
	for i := range n {
		rec := genRecord(rng, i)
		rec.Split = corpus.ExportSplits[i%3]
		if i%7 == 0 {
			rec.Source = ""
		}
		if err := r.Append(&rec); err != nil {
			t.Fatal(err)
		}
		recs[rec.ID] = stored(rec)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return recs
}

func str() arrow.DataType { return arrow.BinaryTypes.String }

func field(name string, dt arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: dt} }

func listOf(dt arrow.DataType) arrow.DataType { return arrow.ListOfField(field("element", dt)) }

// The Arrow schemas the trainers need: UTF-8 strings (not binary, not
// large_string), standard lists (not large_list), structs, no maps, nothing
// nullable.
var wantExportSchemas = map[string]*arrow.Schema{
	corpus.FormatVerl: arrow.NewSchema([]arrow.Field{
		field("data_source", str()),
		field("prompt", listOf(arrow.StructOf(field("role", str()), field("content", str())))),
		field("ability", str()),
		field("reward_model", arrow.StructOf(field("style", str()), field("ground_truth", str()))),
		field("extra_info", arrow.StructOf(field("split", str()), field("index", arrow.PrimitiveTypes.Int64), field("id", str()),
			field("question", str()), field("answer", str()), field("rubric", str()), field("scheme", str()), field("spec_version", str()),
			field("passage", str()))),
		field("label", str()),
		field("solution", str()),
	}, nil),
	corpus.FormatRaR: arrow.NewSchema([]arrow.Field{
		field("question", str()), field("reference_answer", str()), field("question_source", str()),
		field("rubric", listOf(arrow.StructOf(field("title", str()), field("description", str()), field("weight", arrow.PrimitiveTypes.Float64)))),
		field("id", str()),
	}, nil),
	corpus.FormatSRaRLines: arrow.NewSchema([]arrow.Field{
		field("problem", str()), field("rubric", str()), field("ground_truth", str()), field("id", str()),
	}, nil),
}

func TestArrowReadsExports(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	recs := exportCorpus(t, run, 90)
	for _, format := range []string{corpus.FormatVerl, corpus.FormatRaR, corpus.FormatSRaRLines} {
		t.Run(format, func(t *testing.T) {
			src := run
			if format == corpus.FormatSRaRLines {
				src = filepath.Join(dir, "srar")
				srarCorpus(t, run, src)
			}
			out := filepath.Join(dir, "export-"+format)
			m, err := corpus.Export(context.Background(), src, corpus.ExportOptions{Format: format, Out: out, RowsPerFile: 20,
				RowGroupRows: 8, SystemPrompt: map[bool]string{true: "Reason step by step."}[format == corpus.FormatVerl],
				ToolVersion: "interop", Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Files) < 6 {
				t.Fatalf("%d files; the test wants several per split", len(m.Files))
			}
			var rows int64
			for _, f := range m.Files {
				tbl := readExportWithArrow(t, filepath.Join(out, f.File), wantExportSchemas[format])
				rows += tbl.NumRows()
				if tbl.NumRows() != f.Rows {
					t.Errorf("%s: arrow reads %d rows, export.json says %d", f.File, tbl.NumRows(), f.Rows)
				}
				if format == corpus.FormatVerl {
					checkVerlThroughArrow(t, filepath.Join(out, f.File), tbl, recs)
				}
				tbl.Release()
			}
			if rows != m.RecordsOut {
				t.Errorf("arrow reads %d rows, export.json says %d", rows, m.RecordsOut)
			}
		})
	}
}

// srarCorpus copies the records of run as SRaR records into dst, because
// srar-lines holds SRaR rubrics only.
func srarCorpus(t *testing.T, run, dst string) {
	t.Helper()
	r, err := corpus.Open(dst, corpus.Options{ShardRows: 70, ToolVersion: "interop", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = corpus.ReadAll(run, func(rec *schema.Record) error {
		rec.Style = schema.StyleSRaR
		return r.Append(rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// readExportWithArrow reads one data file with arrow-go and checks its
// schema against want, field by field: names, order, types, nullability.
func readExportWithArrow(t *testing.T, path string, want *arrow.Schema) arrow.Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatalf("arrow cannot open %s: %v", path, err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if sc.NumFields() != want.NumFields() {
		t.Fatalf("%s: %d columns, want %d:\n%s", path, sc.NumFields(), want.NumFields(), sc)
	}
	for i, wf := range want.Fields() {
		gf := sc.Field(i)
		if gf.Name != wf.Name || !arrow.TypeEqual(gf.Type, wf.Type) || gf.Nullable != wf.Nullable || !nestedNonNullable(gf.Type) {
			t.Errorf("%s: column %d is %s: %s (nullable %v), want %s: %s (not nullable, nothing inside nullable)",
				path, i, gf.Name, gf.Type, gf.Nullable, wf.Name, wf.Type)
		}
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow ReadTable %s: %v", path, err)
	}
	return tbl
}

func nestedNonNullable(dt arrow.DataType) bool {
	nt, ok := dt.(arrow.NestedType)
	if !ok {
		return true
	}
	for _, f := range nt.Fields() {
		if f.Nullable || !nestedNonNullable(f.Type) {
			return false
		}
	}
	return true
}

// checkVerlThroughArrow decodes every verl row through arrow, compares it
// with what the project's own reader sees, and checks the prompt: the
// system message and the problem, never the rubric, the reference or the
// answer.
func checkVerlThroughArrow(t *testing.T, path string, tbl arrow.Table, recs map[string]schema.Record) {
	t.Helper()
	var own []corpus.VerlRow
	if err := corpus.Scan(path, func(r *corpus.VerlRow) error { own = append(own, *r); return nil }); err != nil {
		t.Fatal(err)
	}
	tr := array.NewTableReader(tbl, 50)
	defer tr.Release()
	i := 0
	for tr.Next() {
		for _, row := range verlRowsOf(t, tr.RecordBatch()) {
			if i >= len(own) || !reflect.DeepEqual(row, own[i]) {
				t.Fatalf("%s row %d through arrow:\n%+v\nthrough parquet-go:\n%+v", path, i, row, own[min(i, len(own)-1)])
			}
			i++
			rec, ok := recs[row.ExtraInfo.ID]
			if !ok {
				t.Fatalf("%s: unknown id %s", path, row.ExtraInfo.ID)
			}
			checkArrowPrompt(t, path, row, rec)
		}
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
}

func checkArrowPrompt(t *testing.T, path string, row corpus.VerlRow, rec schema.Record) {
	t.Helper()
	want := []corpus.ChatMessage{{Role: "system", Content: "Reason step by step."}, {Role: "user", Content: rec.Problem}}
	if !reflect.DeepEqual(row.Prompt, want) {
		t.Errorf("%s: %s: prompt %+v", path, rec.ID, row.Prompt)
	}
	prompt := row.Prompt[0].Content + "\n" + row.Prompt[1].Content
	for _, it := range rec.Rubric {
		if it.Text != "" && strings.Contains(prompt, it.Text) {
			t.Errorf("%s: %s: the prompt holds rubric item %d", path, rec.ID, it.ID)
		}
	}
	if rec.Reference != nil && *rec.Reference != "" && strings.Contains(prompt, *rec.Reference) {
		t.Errorf("%s: %s: the prompt holds the reference", path, rec.ID)
	}
	if rec.Answer != "" && !strings.Contains(rec.Problem, rec.Answer) && strings.Contains(prompt, rec.Answer) {
		t.Errorf("%s: %s: the prompt holds the answer", path, rec.ID)
	}
	if row.RewardModel.GroundTruth != rec.Answer || row.Solution != rec.Answer || row.ExtraInfo.Question != rec.Problem {
		t.Errorf("%s: %s: ground truth, solution or question differ from the record", path, rec.ID)
	}
}

// verlRowsOf converts an arrow record batch of a verl export into rows.
func verlRowsOf(t *testing.T, b arrow.RecordBatch) []corpus.VerlRow {
	c := batchCols(t, b)
	rm := structCols(t, c.col("reward_model"))
	ei := structCols(t, c.col("extra_info"))
	out := make([]corpus.VerlRow, b.NumRows())
	for i := range out {
		row := corpus.VerlRow{
			DataSource: c.str("data_source", i), Ability: c.str("ability", i), Label: c.str("label", i), Solution: c.str("solution", i),
			RewardModel: corpus.VerlRewardModel{Style: rm.str("style", i), GroundTruth: rm.str("ground_truth", i)},
			ExtraInfo: corpus.VerlExtraInfo{
				Split: ei.str("split", i), Index: ei.i64("index", i), ID: ei.str("id", i), Question: ei.str("question", i),
				Answer: ei.str("answer", i), Rubric: ei.str("rubric", i), Scheme: ei.str("scheme", i), SpecVersion: ei.str("spec_version", i),
				Passage: ei.str("passage", i),
			},
			Prompt: []corpus.ChatMessage{},
		}
		msgs, s, e := c.list("prompt", i)
		for j := s; j < e; j++ {
			row.Prompt = append(row.Prompt, corpus.ChatMessage{Role: msgs.str("role", j), Content: msgs.str("content", j)})
		}
		out[i] = row
	}
	return out
}
