package schema

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// TestParquetSchemas builds the Parquet schema of every record type, so a
// struct-tag typo (which panics in parquet-go) fails here rather than mid-run.
func TestParquetSchemas(t *testing.T) {
	for _, v := range []any{new(Record), new(Item), new(Rollout), new(Provenance), new(Usage), new(Grounded), new(Criterion)} {
		t.Run(reflect.TypeOf(v).Elem().Name(), func(t *testing.T) {
			s := parquet.SchemaOf(v)
			if len(s.Fields()) == 0 {
				t.Fatalf("schema of %T has no fields", v)
			}
			if str := s.String(); strings.Contains(str, "MAP") {
				t.Errorf("schema of %T has a map column:\n%s", v, str)
			}
		})
	}
}

func TestRecordSchemaShape(t *testing.T) {
	s := parquet.SchemaOf(new(Record))
	str := s.String()
	for _, want := range []string{
		"group rubric (LIST)",
		"group rollouts (LIST)",
		"group satisfaction (LIST)",
		"optional binary judge_model (STRING)",
		"optional double alpha",
		"required binary job_fingerprint (STRING)",
		"repeated group list",
		"optional binary reference (STRING)",
		"optional boolean valid",
		"optional binary valid_reason (STRING)",
		"optional double sat_rate",
		"optional int32 completion_tokens",
		"required int64 created_at (TIMESTAMP(isAdjustedToUTC=true,unit=MILLIS))",
		"required binary problem (STRING)",
	} {
		if !strings.Contains(str, want) {
			t.Errorf("schema lacks %q:\n%s", want, str)
		}
	}
	// rubric, rollouts, satisfaction; grounded's concepts, questions,
	// criteria, required_elements, expected_keywords, expected_concepts,
	// answers, scores, open_book_answers and their scores; the panel's
	// judges, validity and
	// its verdicts, satisfaction, its judges and their satisfaction,
	// criteria and their verdicts, scores, their judges and their scores.
	if n := strings.Count(str, "(LIST)"); n != 24 {
		t.Errorf("schema has %d LIST groups, want 24:\n%s", n, str)
	}
	if strings.Contains(str, "MAP") {
		t.Errorf("schema has a map column:\n%s", str)
	}
}

func fullRecord() Record {
	return Record{
		ID:        "0123456789abcdef",
		Source:    "examples",
		Split:     "train",
		Problem:   "Find xy + 1/(xy) given x + 1/y = 3 and y + 1/x = 4.",
		Answer:    "10",
		Reference: ptr("Multiply the equations: xy + 2 + 1/(xy) = 12."),
		Style:     StyleSRaR,
		Rubric: []Item{
			{ID: 1, Type: TypeSuggest, Text: "Multiplies the equations.", Weight: 1, Polarity: 1,
				Valid: ptr(true), ValidReason: ptr("correct"), SatRate: ptr(0.75), Corr: ptr(0.5), EmpiricalValid: ptr(true)},
			{ID: 2, Type: TypePitfall, Text: "Drops the 2.", Weight: 1, Polarity: -1,
				Valid: ptr(false), ValidReason: ptr(""), SatRate: ptr(0.0), Corr: ptr(-0.25), EmpiricalValid: ptr(false)},
			{ID: 3, Type: TypeAnswer, Text: "Equals 10.", Weight: 1, Polarity: 1},
		},
		Rollouts: []Rollout{
			{Index: 0, Text: "### Step 1: ...", ExtractedAnswer: "10", Correct: true, FormatOK: true, FinishReason: "stop", CompletionTokens: ptr(int32(812)),
				Satisfaction: []Satisfaction{{ID: 1, Satisfied: true, Step: 2}, {ID: 2, Satisfied: false, Step: -1}, {ID: 3, Satisfied: true, Step: 0}}},
			{Index: 1, Text: "### Step 1: ...", ExtractedAnswer: "12", Correct: false, FormatOK: false, FinishReason: "length", CompletionTokens: ptr(int32(0)), Satisfaction: []Satisfaction{}},
		},
		NCorrect: 1,
		PassRate: 0.5,
		Provenance: Provenance{
			RolloutModel: "m1", DistillModel: "m2", JudgeModel: ptr("m3"), EmpiricalModel: ptr("m4"), Alpha: ptr(0.2), JobFingerprint: "0123456789abcdef",
			RolloutTemplate: "aa", DistillTemplate: "bb", JudgeTemplate: ptr("cc"), SatisfyTemplate: ptr("dd"),
			SpecVersion: SpecVersion, ToolVersion: "v0.1.0",
			CreatedAt: time.Date(2026, 8, 30, 12, 34, 56, 789_000_000, time.UTC),
		},
		Usage: Usage{Requests: 12, CachedRequests: 3, PromptTokens: 45000, CompletionTokens: 9000, CostUSD: 0.0421},
	}
}

func sparseRecord() Record {
	return Record{
		ID:       "fedcba9876543210",
		Problem:  "p",
		Answer:   "a",
		Style:    StyleFactualProcess,
		Rubric:   []Item{},
		Rollouts: []Rollout{},
		Provenance: Provenance{
			CreatedAt: time.Unix(0, 0).UTC(),
		},
	}
}

// TestParquetRoundTrip writes records with nil and set optional fields and
// empty and non-empty lists, zstd-compressed, and reads them back unchanged.
func TestParquetRoundTrip(t *testing.T) {
	in := []Record{sparseRecord(), fullRecord()}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Record](&buf, parquet.Compression(&parquet.Zstd))
	if n, err := w.Write(in); err != nil || n != len(in) {
		t.Fatalf("Write: n=%d err=%v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	for _, rg := range f.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec.String() != "ZSTD" {
				t.Errorf("column %v codec %v, want ZSTD", c.MetaData.PathInSchema, c.MetaData.Codec)
			}
		}
	}

	r := parquet.NewGenericReader[Record](bytes.NewReader(buf.Bytes()))
	defer r.Close()
	out := make([]Record, len(in)+1)
	n, err := r.Read(out)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("Read: %v", err)
	}
	if n != len(in) {
		t.Fatalf("read %d rows, want %d", n, len(in))
	}
	for i := range in {
		got := out[i]
		if got.Provenance.CreatedAt.Location() != time.UTC {
			t.Errorf("row %d: created_at location %v, want UTC", i, got.Provenance.CreatedAt.Location())
		}
		if !reflect.DeepEqual(got, in[i]) {
			t.Errorf("row %d differs:\n got %+v\nwant %+v", i, got, in[i])
		}
	}
	// Empty lists must come back as empty, not nil, and nil pointers as nil.
	if out[0].Rubric == nil || out[0].Rollouts == nil {
		t.Errorf("empty lists came back nil: rubric %v rollouts %v", out[0].Rubric == nil, out[0].Rollouts == nil)
	}
	if out[0].Reference != nil {
		t.Errorf("nil reference came back as %q", *out[0].Reference)
	}
}

// TestParquetTimestampPrecision documents that created_at keeps milliseconds
// only: producers must truncate and use UTC to round-trip exactly.
func TestParquetTimestampPrecision(t *testing.T) {
	rec := sparseRecord()
	rec.Provenance.CreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, time.FixedZone("X", 3600))
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Record](&buf)
	if _, err := w.Write([]Record{rec}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := parquet.Read[Record](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil || len(out) != 1 {
		t.Fatalf("Read: %v, %d rows", err, len(out))
	}
	want := rec.Provenance.CreatedAt.Truncate(time.Millisecond).UTC()
	if got := out[0].Provenance.CreatedAt; !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("created_at = %v, want %v", got, want)
	}
}
