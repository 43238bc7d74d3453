package corpus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/schema"
)

func quietExportOptions(format, out string) ExportOptions {
	return ExportOptions{Format: format, Out: out, ToolVersion: "export-test", Logger: slog.New(slog.DiscardHandler)}
}

// exportIn runs in a fresh directory holding the fixture corpus as "run",
// so that the paths export.json and the card show are the same every time.
func exportIn(t *testing.T, recs []schema.Record, opt ExportOptions) (*ExportManifest, error) {
	t.Helper()
	t.Chdir(t.TempDir())
	writeExportCorpus(t, "run", recs, 3)
	return Export(context.Background(), "run", opt)
}

func TestExportGolden(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		recs         []schema.Record
		opt          func(*ExportOptions)
	}{
		{"verl", FormatVerl, exportFixture(), nil},
		{"verl-valid-only-system-prompt", FormatVerl, exportFixture(), func(o *ExportOptions) {
			o.ValidOnly, o.SystemPrompt, o.SystemPromptFile = true, "Solve step by step; end with <answer>...</answer>.", "system.txt"
		}},
		{"verl-split-train-rows-2", FormatVerl, exportFixture(), func(o *ExportOptions) { o.Splits, o.RowsPerFile = []string{"train"}, 2 }},
		{"rar", FormatRaR, exportFixture(), nil},
		{"srar-lines", FormatSRaRLines, srarOnly(exportFixture()), func(o *ExportOptions) { o.ValidOnly = true }},
		{"jsonl", FormatJSONL, exportFixture(), func(o *ExportOptions) { o.ValidOnly = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := quietExportOptions(tc.format, "export")
			if tc.opt != nil {
				tc.opt(&opt)
			}
			m, err := exportIn(t, tc.recs, opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := readManifestFile(t, "export"); !reflect.DeepEqual(&got, m) {
				t.Errorf("export.json differs from what Export returned:\n%+v\n%+v", got, *m)
			}
			checkGolden(t, tc.name, exportDump(t, "export", m))
		})
	}
}

func TestExportPromptNeverHoldsRubricReferenceOrAnswer(t *testing.T) {
	recs := exportFixture()
	const system = "You are a careful mathematician."
	for _, validOnly := range []bool{false, true} {
		t.Run(fmt.Sprint("valid-only=", validOnly), func(t *testing.T) {
			opt := quietExportOptions(FormatVerl, "export")
			opt.SystemPrompt, opt.ValidOnly = system, validOnly
			m, err := exportIn(t, recs, opt)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]schema.Record{}
			for _, r := range recs {
				byID[r.ID] = r
			}
			n := 0
			for file, rows := range readRows[VerlRow](t, "export", m) {
				for _, row := range rows {
					n++
					checkPrompt(t, file, row, byID[row.ExtraInfo.ID], system)
				}
			}
			if int64(n) != m.RecordsOut || n == 0 {
				t.Errorf("checked %d rows, export.json says %d", n, m.RecordsOut)
			}
		})
	}
}

// checkPrompt asserts the prompt is exactly the system message and the
// problem, and that no rubric text, reference, label or (unless the problem
// itself states it) answer reaches it.
func checkPrompt(t *testing.T, file string, row VerlRow, rec schema.Record, system string) {
	t.Helper()
	want := []ChatMessage{{Role: "system", Content: system}, {Role: "user", Content: rec.Problem}}
	if !reflect.DeepEqual(row.Prompt, want) {
		t.Errorf("%s: row %s: prompt %+v, want %+v", file, rec.ID, row.Prompt, want)
	}
	var seen strings.Builder
	for _, msg := range row.Prompt {
		seen.WriteString(msg.Content + "\n")
	}
	prompt := seen.String()
	for _, it := range rec.Rubric {
		if strings.Contains(prompt, it.Text) {
			t.Errorf("%s: row %s: the prompt holds rubric item %d", file, rec.ID, it.ID)
		}
	}
	if rec.Reference != nil && strings.Contains(prompt, *rec.Reference) {
		t.Errorf("%s: row %s: the prompt holds the reference", file, rec.ID)
	}
	if !strings.Contains(rec.Problem, rec.Answer) && strings.Contains(prompt, rec.Answer) {
		t.Errorf("%s: row %s: the prompt holds the answer %q", file, rec.ID, rec.Answer)
	}
	if strings.Contains(prompt, row.Label) || strings.Contains(prompt, row.ExtraInfo.Rubric) {
		t.Errorf("%s: row %s: the prompt holds the label or the rubric JSON", file, rec.ID)
	}
}

func TestExportVerlColumnsAgree(t *testing.T) {
	opt := quietExportOptions(FormatVerl, "export")
	opt.ValidOnly = true
	m, err := exportIn(t, exportFixture(), opt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]schema.Record{}
	for _, r := range exportFixture() {
		if _, holds := dropInvalid(&r); holds {
			want[r.ID] = r
		}
	}
	index := map[string]int64{}
	for _, f := range m.Files {
		var rows []VerlRow
		if err := Scan(filepath.Join("export", f.File), func(r *VerlRow) error { rows = append(rows, *r); return nil }); err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			rec, ok := want[row.ExtraInfo.ID]
			if !ok {
				t.Fatalf("%s: row %s should have been dropped", f.File, row.ExtraInfo.ID)
			}
			delete(want, rec.ID)
			label, err := schema.ParseLabel([]byte(row.Label))
			if err != nil {
				t.Fatalf("%s: row %s: label does not parse: %v", f.File, rec.ID, err)
			}
			if wantLabel := schema.LabelOf(&rec); !reflect.DeepEqual(label, wantLabel) {
				t.Errorf("%s: row %s: label\n%+v\nwant LabelOf after --valid-only\n%+v", f.File, rec.ID, label, wantLabel)
			}
			var rubric []schema.Item
			if err := json.Unmarshal([]byte(row.ExtraInfo.Rubric), &rubric); err != nil || !reflect.DeepEqual(rubric, label.Rubric) {
				t.Errorf("%s: row %s: extra_info.rubric %s is not the label's rubric (%v)", f.File, rec.ID, row.ExtraInfo.Rubric, err)
			}
			if row.ExtraInfo.Index != index[row.ExtraInfo.Split] {
				t.Errorf("%s: row %s: index %d, want %d (rows of a split numbered from 0)", f.File, rec.ID, row.ExtraInfo.Index, index[row.ExtraInfo.Split])
			}
			index[row.ExtraInfo.Split]++
			wantSource := "rubricforge/" + rec.Source
			if rec.Source == "" {
				wantSource = "rubricforge"
			}
			if row.DataSource != wantSource || row.Ability != "math" || row.RewardModel != (VerlRewardModel{"rubric", rec.Answer}) ||
				row.Solution != rec.Answer || row.ExtraInfo.Answer != rec.Answer || row.ExtraInfo.Question != rec.Problem ||
				row.ExtraInfo.Scheme != schema.DefaultScheme(rec.Style) || row.ExtraInfo.SpecVersion != schema.SpecVersion ||
				!strings.HasPrefix(f.File, "data/"+row.ExtraInfo.Split+"-") {
				t.Errorf("%s: row %s: %+v", f.File, rec.ID, row)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("records missing from the export: %v", slices.Collect(mapKeys(want)))
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestExportValidOnlyCounts(t *testing.T) {
	opt := quietExportOptions(FormatJSONL, "export")
	opt.ValidOnly = true
	m, err := exportIn(t, exportFixture(), opt)
	if err != nil {
		t.Fatal(err)
	}
	// Record 2 loses its invalid PITFALL; record 3 loses its only ANSWER and
	// record 7 falls below three criteria: both are dropped.
	if m.RecordsIn != 7 || m.RecordsOut != 5 || m.RecordsDropped != 2 || m.ItemsDropped != 1 {
		t.Errorf("in %d out %d dropped %d items dropped %d, want 7 5 2 1", m.RecordsIn, m.RecordsOut, m.RecordsDropped, m.ItemsDropped)
	}
	if got := m.Splits["validation"]; got != (SplitCounts{Rows: 0, Files: 0}) {
		t.Errorf("validation split %+v: every record of it was dropped", got)
	}
	var rec schema.Record
	data, _ := os.ReadFile(filepath.Join("export", "data", "train-00000-of-00001.jsonl"))
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var r schema.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.ID == "1b2c3d4e5f607182" {
			rec = r
		}
	}
	gotTypes := []string{}
	for i, it := range rec.Rubric {
		gotTypes = append(gotTypes, it.Type)
		if it.ID != int32(i+1) {
			t.Errorf("item %d has id %d; ids are renumbered 1..n", i, it.ID)
		}
	}
	if !slices.Equal(gotTypes, []string{"SUGGEST", "BONUS", "ANSWER"}) {
		t.Errorf("kept items %v", gotTypes)
	}
	// The verdicts follow their items: the dropped item's goes, 3 -> 2, 4 -> 3.
	want := []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 1}, {ID: 2, Satisfied: true, Step: 1}, {ID: 3, Satisfied: true, Step: 0}}
	if len(rec.Rollouts) != 1 || !reflect.DeepEqual(rec.Rollouts[0].Satisfaction, want) {
		t.Errorf("satisfaction after --valid-only: %+v, want %+v", rec.Rollouts, want)
	}
}

func TestExportIsIdempotent(t *testing.T) {
	for _, format := range ExportFormats {
		t.Run(format, func(t *testing.T) {
			recs := exportFixture()
			if format == FormatSRaRLines {
				recs = srarOnly(recs)
			}
			opt := quietExportOptions(format, "export")
			opt.RowsPerFile, opt.ValidOnly = 2, true
			if _, err := exportIn(t, recs, opt); err != nil {
				t.Fatal(err)
			}
			first := dirFiles(t, "export")
			if _, err := Export(context.Background(), "run", opt); err != nil {
				t.Fatal(err)
			}
			if second := dirFiles(t, "export"); !reflect.DeepEqual(first, second) {
				t.Errorf("a second export with the same arguments changed the directory: %v -> %v", slices.Sorted(mapKeys(first)), slices.Sorted(mapKeys(second)))
			}
		})
	}
}

func TestExportFilesAreBoundedNamedAndListed(t *testing.T) {
	opt := quietExportOptions(FormatVerl, "export")
	opt.RowsPerFile, opt.RowGroupRows = 2, 1
	m, err := exportIn(t, exportFixture(), opt)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet",
		"data/validation-00000-of-00001.parquet", "data/test-00000-of-00001.parquet"}
	var names []string
	var first *parquet.Schema
	for _, f := range m.Files {
		names = append(names, f.File)
		data, err := os.ReadFile(filepath.Join("export", f.File))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != f.Bytes || fmt.Sprintf("%016x", xxhash.Sum64(data)) != f.XXHash64 {
			t.Errorf("%s: %d bytes, xxhash64 %016x; export.json says %d, %s", f.File, len(data), xxhash.Sum64(data), f.Bytes, f.XXHash64)
		}
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if pf.NumRows() != f.Rows || f.Rows > 2 || len(pf.RowGroups()) != int(f.Rows) {
			t.Errorf("%s: %d rows in %d row groups; export.json says %d rows, the bound is 2 per file and 1 per group",
				f.File, pf.NumRows(), len(pf.RowGroups()), f.Rows)
		}
		if first == nil {
			first = pf.Schema()
		} else if !parquet.EqualNodes(first, pf.Schema()) {
			t.Errorf("%s has another schema than %s", f.File, m.Files[0].File)
		}
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("files %v, want %v", names, wantNames)
	}
	entries, _ := os.ReadDir(filepath.Join("export", "data"))
	if len(entries) != len(wantNames) {
		t.Errorf("data/ holds %d entries, want only the %d data files", len(entries), len(wantNames))
	}
}

func TestExportCardConfigsNameTheFiles(t *testing.T) {
	opt := quietExportOptions(FormatVerl, "export")
	opt.RowsPerFile = 2
	m, err := exportIn(t, exportFixture(), opt)
	if err != nil {
		t.Fatal(err)
	}
	card, err := os.ReadFile(filepath.Join("export", DatasetCardName))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(string(card), "---\n", 3)
	if len(parts) != 3 || parts[0] != "" {
		t.Fatalf("the card does not start with YAML front matter:\n%s", card)
	}
	var front struct {
		Configs []struct {
			ConfigName string `yaml:"config_name"`
			DataFiles  []struct {
				Split string   `yaml:"split"`
				Path  []string `yaml:"path"`
			} `yaml:"data_files"`
		} `yaml:"configs"`
		SizeCategories []string `yaml:"size_categories"`
	}
	if err := yaml.Unmarshal([]byte(parts[1]), &front); err != nil {
		t.Fatalf("front matter is not YAML: %v", err)
	}
	if len(front.Configs) != 1 || front.Configs[0].ConfigName != "default" {
		t.Fatalf("configs: %+v", front.Configs)
	}
	got := map[string][]string{}
	for _, df := range front.Configs[0].DataFiles {
		got[df.Split] = df.Path
	}
	want := map[string][]string{}
	for _, f := range m.Files {
		split := strings.Split(strings.TrimPrefix(f.File, "data/"), "-")[0]
		want[split] = append(want[split], f.File)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configs name %v, the export has %v", got, want)
	}
	if !slices.Equal(front.SizeCategories, []string{"n<1K"}) {
		t.Errorf("size_categories %v", front.SizeCategories)
	}
	// Every column is documented with the type it has in the files.
	sc := parquet.SchemaOf(new(VerlRow))
	for _, f := range sc.Fields() {
		if !strings.Contains(string(card), "| `"+f.Name()+"` | `"+typeString(f)+"` |") {
			t.Errorf("the card does not document column %s as %s", f.Name(), typeString(f))
		}
	}
}

func TestExportColumnDocsMatchSchemas(t *testing.T) {
	t.Parallel()
	for _, name := range ExportFormats {
		f := formatOf(name)
		var cols []string
		for _, c := range f.columns {
			cols = append(cols, c.name)
		}
		var fields []string
		for _, fl := range f.schema().Fields() {
			fields = append(fields, fl.Name())
		}
		if !slices.Equal(cols, fields) {
			t.Errorf("%s: documented columns %v, schema %v", name, cols, fields)
		}
	}
	want := "struct<split: string, index: int64, id: string, question: string, answer: string, rubric: string, scheme: string, spec_version: string, passage: string>"
	if got := typeString(parquet.SchemaOf(new(VerlRow)).Fields()[4]); got != want {
		t.Errorf("extra_info is %s", got)
	}
}

func TestExportSRaRLinesReadBackBySRaRParser(t *testing.T) {
	recs := srarOnly(exportFixture())
	m, err := exportIn(t, recs, quietExportOptions(FormatSRaRLines, "export"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]schema.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	for file, rows := range readRows[SRaRLinesRow](t, "export", m) {
		for _, row := range rows {
			rec := byID[row.ID]
			res, err := schema.ParseSRaR(row.Rubric, schema.SRaROptions{})
			if err != nil {
				t.Errorf("%s: row %s: ParseSRaR: %v\n%s", file, row.ID, err, row.Rubric)
				continue
			}
			if len(res.Items) != len(rec.Rubric) {
				t.Errorf("%s: row %s: %d items read back, %d written", file, row.ID, len(res.Items), len(rec.Rubric))
				continue
			}
			for i, it := range res.Items {
				if it.Type != rec.Rubric[i].Type || it.Text != strings.Join(strings.Fields(rec.Rubric[i].Text), " ") {
					t.Errorf("%s: row %s item %d: %s %q, wrote %s %q", file, row.ID, i+1, it.Type, it.Text, rec.Rubric[i].Type, rec.Rubric[i].Text)
				}
			}
			if row.Problem != rec.Problem || row.GroundTruth != rec.Answer || strings.Contains(row.Problem, row.Rubric) {
				t.Errorf("%s: row %s: %+v", file, row.ID, row)
			}
		}
	}
}

func TestExportSRaRLinesRefusesOtherStylesAndKeepsTheEarlierExport(t *testing.T) {
	if _, err := exportIn(t, exportFixture(), quietExportOptions(FormatRaR, "export")); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, "export")
	_, err := Export(context.Background(), "run", quietExportOptions(FormatSRaRLines, "export"))
	if err == nil || !strings.Contains(err.Error(), "3d4e5f6071829304") || !strings.Contains(err.Error(), "factual_process") {
		t.Fatalf("error %v does not name the record and its style", err)
	}
	if after := dirFiles(t, "export"); !reflect.DeepEqual(before, after) {
		t.Errorf("a failed export changed the earlier one: %v -> %v", slices.Sorted(mapKeys(before)), slices.Sorted(mapKeys(after)))
	}
}

func TestExportDirectoryRules(t *testing.T) {
	t.Chdir(t.TempDir())
	writeExportCorpus(t, "run", exportFixture(), 4)
	ctx := context.Background()

	// A directory with other files is refused, and left alone.
	os.MkdirAll(filepath.Join("mine", "data"), 0o755)
	os.WriteFile(filepath.Join("mine", "notes.txt"), []byte("keep me"), 0o644)
	os.WriteFile(filepath.Join("mine", "data", "extra.parquet"), []byte("keep me too"), 0o644)
	_, err := Export(ctx, "run", quietExportOptions(FormatVerl, "mine"))
	if err == nil || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "data/extra.parquet") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("error %v does not refuse the directory by naming its files and --force", err)
	}
	if _, err := os.Stat(filepath.Join("mine", ExportManifestName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused export wrote into the directory")
	}
	// --force writes among them and keeps them.
	opt := quietExportOptions(FormatVerl, "mine")
	opt.Force = true
	if _, err := Export(ctx, "run", opt); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join("mine", "notes.txt")); string(data) != "keep me" {
		t.Errorf("--force removed a file that was not the export's")
	}

	// An earlier export of another format and layout is replaced without
	// --force; its data files that the new one lacks are removed.
	opt = quietExportOptions(FormatRaR, "exp")
	opt.RowsPerFile = 1
	if _, err := Export(ctx, "run", opt); err != nil {
		t.Fatal(err)
	}
	m, err := Export(ctx, "run", quietExportOptions(FormatJSONL, "exp"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range m.Files {
		want = append(want, f.File)
	}
	want = append(want, DatasetCardName, ExportManifestName)
	if got := slices.Sorted(mapKeys(dirFiles(t, "exp"))); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("after re-exporting, the directory holds %v, want %v", got, want)
	}

	// A run directory is not an export directory, and an export is not a corpus.
	if _, err := Export(ctx, "exp", quietExportOptions(FormatVerl, "again")); err == nil || !strings.Contains(err.Error(), "export directory") {
		t.Errorf("exporting an export: %v", err)
	}
	if _, err := Export(ctx, "run", quietExportOptions(FormatVerl, "run")); err == nil || !strings.Contains(err.Error(), ManifestName) {
		t.Errorf("exporting into the run directory: %v", err)
	}
}

func TestExportNothingToExport(t *testing.T) {
	opt := quietExportOptions(FormatVerl, "export")
	opt.Splits = []string{"validation"}
	opt.ValidOnly = true
	_, err := exportIn(t, exportFixture(), opt)
	if err == nil || !strings.Contains(err.Error(), "all 2 records") {
		t.Fatalf("error %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join("export", "data"))
	if len(entries) != 0 {
		t.Errorf("a failed export left %d files in data/", len(entries))
	}
}

func TestExportOptionsCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opt  ExportOptions
		want string
	}{
		{ExportOptions{Format: "parquet", Out: "x"}, `--format "parquet"`},
		{ExportOptions{Format: FormatVerl}, "--out"},
		{ExportOptions{Format: FormatRaR, Out: "x", SystemPrompt: "s"}, "--system-prompt"},
		{ExportOptions{Format: FormatVerl, Out: "x", SystemPrompt: "\xff"}, "UTF-8"},
		{ExportOptions{Format: FormatVerl, Out: "x", Splits: []string{"val"}}, `--split "val"`},
		{ExportOptions{Format: FormatVerl, Out: "x", Splits: []string{"train", "train"}}, "twice"},
		{ExportOptions{Format: FormatVerl, Out: "x", RowsPerFile: -1}, "--rows-per-file"},
		{ExportOptions{Format: FormatVerl, Out: "x", Splits: []string{"train", "test"}, SystemPrompt: "s"}, ""},
	} {
		err := tc.opt.Check()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: error %v, want %q", tc.opt, err, tc.want)
		}
	}
}
