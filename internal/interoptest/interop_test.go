package interoptest

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

func TestArrowReadsCorpusShards(t *testing.T) {
	dir := t.TempDir()
	const n = 100
	recs := make([]schema.Record, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range recs {
		recs[i] = genRecord(rng, i)
	}
	r, err := corpus.Open(dir, corpus.Options{ShardRows: 40, RowGroupRows: 8, ToolVersion: "interop",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := r.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	want := make(map[string]schema.Record, n)
	for _, rec := range recs {
		want[rec.ID] = rec
	}

	m := r.Manifest()
	if len(m.Shards) != 3 {
		t.Fatalf("%d shards, want 3", len(m.Shards))
	}
	seen := 0
	for _, s := range m.Shards {
		got := readShardWithArrow(t, filepath.Join(dir, s.File))
		if int64(len(got)) != s.Rows {
			t.Errorf("%s: arrow read %d rows, manifest says %d", s.File, len(got), s.Rows)
		}
		for _, g := range got {
			w, ok := want[g.ID]
			if !ok {
				t.Fatalf("%s: unexpected id %q", s.File, g.ID)
			}
			if !reflect.DeepEqual(g, stored(w)) {
				t.Fatalf("%s: record %s differs through arrow:\n got %+v\nwant %+v", s.File, g.ID, g, stored(w))
			}
			seen++
		}
	}
	if seen != n {
		t.Errorf("arrow saw %d records, wrote %d", seen, n)
	}
}

// readShardWithArrow reads one shard with arrow-go, checks its arrow schema
// and file metadata, and converts every row back into a schema.Record.
func readShardWithArrow(t *testing.T, path string) []schema.Record {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)

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
	md := rdr.MetaData()
	if cb := md.GetCreatedBy(); !strings.HasPrefix(cb, "rubricforge version interop") {
		t.Errorf("created_by = %q", cb)
	}
	if v := md.KeyValueMetadata().FindValue("spec_version"); v == nil || *v != schema.SpecVersion {
		t.Errorf("spec_version metadata = %v", v)
	}

	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64}, mem)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	checkArrowSchema(t, sc)

	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow ReadTable %s: %v", path, err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 50)
	defer tr.Release()
	var out []schema.Record
	for tr.Next() {
		out = append(out, batchRecords(t, tr.RecordBatch())...)
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkArrowSchema(t *testing.T, sc *arrow.Schema) {
	t.Helper()
	for _, name := range []string{"rubric", "rollouts"} {
		fs, _ := sc.FieldsByName(name)
		if len(fs) != 1 {
			t.Fatalf("arrow schema has %d fields named %s", len(fs), name)
		}
		lt, ok := fs[0].Type.(*arrow.ListType)
		if !ok {
			t.Fatalf("%s is %s, want a list", name, fs[0].Type)
		}
		if fs[0].Nullable {
			t.Errorf("%s is a nullable list; empty lists must be empty, not null", name)
		}
		if el := lt.ElemField(); el.Name != "element" || el.Type.ID() != arrow.STRUCT {
			t.Errorf("%s is %s, want list<element: struct<...>>", name, lt)
		}
	}
	var walk func(path string, dt arrow.DataType)
	walk = func(path string, dt arrow.DataType) {
		switch dt := dt.(type) {
		case *arrow.MapType:
			t.Errorf("%s is a map type: %s", path, dt)
		case arrow.NestedType:
			for _, f := range dt.Fields() {
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	for _, f := range sc.Fields() {
		walk(f.Name, f.Type)
	}
	fs, _ := sc.FieldsByName("provenance")
	ts, _ := fs[0].Type.(*arrow.StructType).FieldByName("created_at")
	if tt, ok := ts.Type.(*arrow.TimestampType); !ok || tt.Unit != arrow.Millisecond || tt.TimeZone != "UTC" {
		t.Errorf("created_at is %s, want timestamp[ms, tz=UTC]", ts.Type)
	}
}

// cols finds columns of a record batch or a struct array by name.
type cols struct {
	t     *testing.T
	names []string
	get   func(int) arrow.Array
}

func batchCols(t *testing.T, b arrow.RecordBatch) cols {
	names := make([]string, b.NumCols())
	for i := range names {
		names[i] = b.ColumnName(i)
	}
	return cols{t, names, b.Column}
}

func structCols(t *testing.T, a arrow.Array) cols {
	st, ok := a.(*array.Struct)
	if !ok {
		t.Fatalf("want a struct array, got %s", a.DataType())
	}
	dt := st.DataType().(*arrow.StructType)
	names := make([]string, dt.NumFields())
	for i := range names {
		names[i] = dt.Field(i).Name
	}
	return cols{t, names, st.Field}
}

func (c cols) col(name string) arrow.Array {
	for i, n := range c.names {
		if n == name {
			return c.get(i)
		}
	}
	c.t.Fatalf("no column %s among %v", name, c.names)
	return nil
}

func as[A arrow.Array](c cols, name string) A {
	a, ok := c.col(name).(A)
	if !ok {
		c.t.Fatalf("column %s is %s", name, c.col(name).DataType())
	}
	return a
}

func (c cols) str(name string, i int) string {
	a := as[*array.String](c, name)
	if a.IsNull(i) {
		c.t.Fatalf("required string %s is null at %d", name, i)
	}
	return a.Value(i)
}

func (c cols) optStr(name string, i int) *string {
	a := as[*array.String](c, name)
	if a.IsNull(i) {
		return nil
	}
	v := a.Value(i)
	return &v
}

func (c cols) i32(name string, i int) int32   { return as[*array.Int32](c, name).Value(i) }
func (c cols) i64(name string, i int) int64   { return as[*array.Int64](c, name).Value(i) }
func (c cols) f64(name string, i int) float64 { return as[*array.Float64](c, name).Value(i) }
func (c cols) bool(name string, i int) bool   { return as[*array.Boolean](c, name).Value(i) }

func optional[T any](c cols, name string, i int, get func(string, int) T) *T {
	if c.col(name).IsNull(i) {
		return nil
	}
	v := get(name, i)
	return &v
}

// list returns the element columns and the [start, end) range of row i of
// a list column, failing on a null list.
func (c cols) list(name string, i int) (cols, int, int) {
	l := as[*array.List](c, name)
	if l.IsNull(i) {
		c.t.Fatalf("list %s is null at row %d; want an empty list", name, i)
	}
	s, e := l.ValueOffsets(i)
	return structCols(c.t, l.ListValues()), int(s), int(e)
}

func batchRecords(t *testing.T, b arrow.RecordBatch) []schema.Record {
	c := batchCols(t, b)
	prov := structCols(t, c.col("provenance"))
	usage := structCols(t, c.col("usage"))
	created := as[*array.Timestamp](prov, "created_at")
	out := make([]schema.Record, b.NumRows())
	for i := range out {
		rec := schema.Record{
			ID: c.str("id", i), Source: c.str("source", i), Split: c.str("split", i),
			Problem: c.str("problem", i), Answer: c.str("answer", i), Reference: c.optStr("reference", i),
			Style: c.str("style", i), NCorrect: c.i32("n_correct", i), PassRate: c.f64("pass_rate", i),
			Rubric: []schema.Item{}, Rollouts: []schema.Rollout{},
			Provenance: schema.Provenance{
				RolloutModel: prov.str("rollout_model", i), DistillModel: prov.str("distill_model", i),
				JudgeModel: prov.optStr("judge_model", i), EmpiricalModel: prov.optStr("empirical_model", i),
				RolloutTemplate: prov.str("rollout_template", i),
				DistillTemplate: prov.str("distill_template", i), JudgeTemplate: prov.optStr("judge_template", i),
				SatisfyTemplate: prov.optStr("satisfy_template", i), Alpha: optional(prov, "alpha", i, prov.f64),
				JobFingerprint: prov.str("job_fingerprint", i), SpecVersion: prov.str("spec_version", i),
				ToolVersion: prov.str("tool_version", i),
				CreatedAt:   created.Value(i).ToTime(arrow.Millisecond).UTC(),
			},
			Usage: schema.Usage{
				Requests: usage.i64("requests", i), CachedRequests: usage.i64("cached_requests", i),
				PromptTokens: usage.i64("prompt_tokens", i), CompletionTokens: usage.i64("completion_tokens", i),
				CostUSD: usage.f64("cost_usd", i),
			},
		}
		ru, s, e := c.list("rubric", i)
		for j := s; j < e; j++ {
			rec.Rubric = append(rec.Rubric, schema.Item{
				ID: ru.i32("id", j), Type: ru.str("type", j), Text: ru.str("text", j),
				Weight: ru.f64("weight", j), Polarity: ru.i32("polarity", j),
				Valid: optional(ru, "valid", j, ru.bool), ValidReason: ru.optStr("valid_reason", j),
				SatRate: optional(ru, "sat_rate", j, ru.f64), Corr: optional(ru, "corr", j, ru.f64),
				EmpiricalValid: optional(ru, "empirical_valid", j, ru.bool),
			})
		}
		ro, s, e := c.list("rollouts", i)
		for j := s; j < e; j++ {
			r := schema.Rollout{
				Index: ro.i32("index", j), Text: ro.str("text", j), ExtractedAnswer: ro.str("extracted_answer", j),
				Correct: ro.bool("correct", j), FormatOK: ro.bool("format_ok", j),
				FinishReason: ro.str("finish_reason", j), CompletionTokens: optional(ro, "completion_tokens", j, ro.i32),
				Satisfaction: []schema.Satisfaction{},
			}
			sa, ss, se := ro.list("satisfaction", j)
			for k := ss; k < se; k++ {
				r.Satisfaction = append(r.Satisfaction, schema.Satisfaction{
					ID: sa.i32("item_id", k), Satisfied: sa.bool("satisfied", k), Step: sa.i32("step", k)})
			}
			rec.Rollouts = append(rec.Rollouts, r)
		}
		out[i] = rec
	}
	return out
}

// unicode samples that must survive untouched.
var unicodeBits = []string{"Ω≈ç√∫", "日本語のテキスト", "emoji 🧮🎯", "e\u0301 (combining)", "עברית", "NUL\x00inside", ""}

func text(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "step %d: x^%d = %d ", rng.IntN(9), rng.IntN(5), rng.IntN(1000))
		if rng.IntN(5) == 0 {
			b.WriteString(unicodeBits[rng.IntN(len(unicodeBits))])
		}
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// genRecord varies optional fields (nil, zero, set), lists (nil, empty, full)
// and text (unicode, empty).
func genRecord(rng *rand.Rand, i int) schema.Record {
	rec := schema.Record{
		ID: fmt.Sprintf("%016x", uint64(i)*0x9E3779B97F4A7C15), Source: []string{"gsm8k", "数学"}[i%2],
		Split: "train", Problem: text(rng, 10+rng.IntN(300)), Answer: unicodeBits[i%len(unicodeBits)],
		Style: schema.StyleFactualProcess, NCorrect: int32(i % 5), PassRate: float64(i%5) / 4,
		Provenance: schema.Provenance{RolloutModel: "m1", DistillModel: "m2", RolloutTemplate: "a",
			DistillTemplate: "b", JobFingerprint: fmt.Sprintf("%016x", i%3), SpecVersion: schema.SpecVersion, ToolVersion: "interop",
			CreatedAt: time.UnixMilli(1_750_000_000_123 + int64(i)*86_400_001).UTC()},
		Usage: schema.Usage{Requests: int64(i), CachedRequests: int64(i / 2), PromptTokens: 1 << 40, CompletionTokens: int64(i * 3), CostUSD: 0.125 * float64(i)},
	}
	if i%2 == 1 {
		rec.Provenance.JudgeModel, rec.Provenance.JudgeTemplate = ptr("m3"), ptr("c")
		rec.Provenance.EmpiricalModel, rec.Provenance.SatisfyTemplate, rec.Provenance.Alpha = ptr("m4"), ptr("d"), ptr(0.2)
	}
	if i%3 == 1 {
		rec.Reference = ptr("")
	} else if i%3 == 2 {
		rec.Reference = ptr(text(rng, 200))
	}
	switch i % 4 {
	case 0:
	case 1:
		rec.Rubric = []schema.Item{}
	default:
		for j := range 1 + rng.IntN(5) {
			it := schema.Item{ID: int32(j + 1), Type: schema.ItemTypes[(i+j)%len(schema.ItemTypes)], Text: text(rng, 40), Weight: -1.5 + float64(j)}
			it.Polarity = schema.PolarityOf(it.Type)
			if (i+j)%2 == 1 {
				it.Valid, it.ValidReason, it.SatRate, it.Corr, it.EmpiricalValid = ptr(false), ptr(""), ptr(0.0), ptr(-1.0), ptr(true)
			}
			rec.Rubric = append(rec.Rubric, it)
		}
	}
	switch i % 5 {
	case 0:
	case 1:
		rec.Rollouts = []schema.Rollout{}
	default:
		for j := range 1 + rng.IntN(8) {
			ro := schema.Rollout{Index: int32(j), Text: text(rng, rng.IntN(500)), ExtractedAnswer: unicodeBits[j%len(unicodeBits)],
				Correct: j%2 == 1, FormatOK: j%3 == 0, FinishReason: "stop"}
			if j%3 == 1 {
				ro.CompletionTokens = ptr(int32(0))
			} else if j%3 == 2 {
				ro.CompletionTokens = ptr(int32(512))
			}
			if j%2 == 0 {
				ro.Satisfaction = []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 2}, {ID: 2, Satisfied: false, Step: -1}}
			}
			rec.Rollouts = append(rec.Rollouts, ro)
		}
	}
	return rec
}

// stored is rec as it reads back: lists are never nil.
func stored(rec schema.Record) schema.Record {
	if rec.Rubric == nil {
		rec.Rubric = []schema.Item{}
	}
	rec.Rollouts = append(make([]schema.Rollout, 0, len(rec.Rollouts)), rec.Rollouts...)
	for i := range rec.Rollouts {
		if rec.Rollouts[i].Satisfaction == nil {
			rec.Rollouts[i].Satisfaction = []schema.Satisfaction{}
		}
	}
	return rec
}
