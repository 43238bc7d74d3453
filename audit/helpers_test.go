package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/schema"
)

func ptr[T any](v T) *T { return &v }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// writeExport writes an export directory per the export contract.
func writeExport(t testing.TB, dir, format string, files map[string]int64, validOnly bool) {
	t.Helper()
	type file struct {
		File  string `json:"file"`
		Rows  int64  `json:"rows"`
		Bytes int64  `json:"bytes"`
	}
	var list []file
	for name, rows := range files {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, file{name, rows, st.Size()})
	}
	ex := map[string]any{"format": format, "spec_version": schema.SpecVersion, "source": "runs/fixture",
		"job_fingerprints": []string{"fp-aaaa", "fp-bbbb"}, "valid_only": validOnly, "files": list, "created_at": "2026-03-01T12:00:00Z"}
	data, _ := json.MarshalIndent(ex, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, corpus.ExportManifestName), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeJSONLExport writes recs as a jsonl export.
func writeJSONLExport(t testing.TB, dir string, recs []schema.Record, extraLines ...string) {
	t.Helper()
	var b bytes.Buffer
	for k := range recs {
		line, err := json.Marshal(&recs[k])
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, l := range extraLines {
		b.WriteString(l)
	}
	name := "data/train-00000-of-00001.jsonl"
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeExport(t, dir, "jsonl", map[string]int64{name: int64(len(recs) + len(extraLines))}, false)
}

// verlRow is a row of a verl export, in the contract's column order.
type verlRow struct {
	DataSource string        `parquet:"data_source"`
	Prompt     []verlMessage `parquet:"prompt,list"`
	Ability    string        `parquet:"ability"`
	Reward     struct {
		Style       string `parquet:"style"`
		GroundTruth string `parquet:"ground_truth"`
	} `parquet:"reward_model"`
	ExtraInfo struct {
		Split       string `parquet:"split"`
		Index       int64  `parquet:"index"`
		ID          string `parquet:"id"`
		Question    string `parquet:"question"`
		Answer      string `parquet:"answer"`
		Rubric      string `parquet:"rubric"`
		Scheme      string `parquet:"scheme"`
		SpecVersion string `parquet:"spec_version"`
	} `parquet:"extra_info"`
	Label    string `parquet:"label"`
	Solution string `parquet:"solution"`
}

type verlMessage struct {
	Role    string `parquet:"role"`
	Content string `parquet:"content"`
}

// writeVerlExport writes recs as a verl export, one file per split.
func writeVerlExport(t testing.TB, dir string, recs []schema.Record, validOnly bool) {
	t.Helper()
	bySplit := map[string][]verlRow{}
	for k := range recs {
		rec := &recs[k]
		l := schema.LabelOf(rec)
		label, _ := json.Marshal(l)
		rubric, _ := json.Marshal(rec.Rubric)
		var v verlRow
		v.DataSource, v.Ability, v.Label, v.Solution = "rubricforge/"+rec.Source, "math", string(label), rec.Answer
		v.Prompt = []verlMessage{{"user", rec.Problem}}
		v.Reward.Style, v.Reward.GroundTruth = "rubric", rec.Answer
		e := &v.ExtraInfo
		e.Split, e.Index, e.ID, e.Question, e.Answer = rec.Split, int64(len(bySplit[rec.Split])), rec.ID, rec.Problem, rec.Answer
		e.Rubric, e.Scheme, e.SpecVersion = string(rubric), l.Scheme, schema.SpecVersion
		bySplit[rec.Split] = append(bySplit[rec.Split], v)
	}
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	files := map[string]int64{}
	for split, rows := range bySplit {
		name := fmt.Sprintf("data/%s-00000-of-00001.parquet", split)
		if err := parquet.WriteFile(filepath.Join(dir, name), rows); err != nil {
			t.Fatal(err)
		}
		files[name] = int64(len(rows))
	}
	writeExport(t, dir, "verl", files, validOnly)
}

// auditPath opens and audits paths, failing the test on an error.
func auditPath(t testing.TB, opt Options, paths ...string) *Report {
	t.Helper()
	in, err := Open(paths...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	rep, err := Audit(context.Background(), in, opt)
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	return rep
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
// base is replaced by "FIXTURE" first, so paths do not depend on the
// temporary directory.
func checkGolden(t *testing.T, name, base string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), bytes.ReplaceAll(got, []byte(base), []byte("FIXTURE")))
}

func render(t testing.TB, write func(io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
