package corpus

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// exportGoldenDir is absolute: the export tests change the working directory.
var exportGoldenDir, _ = filepath.Abs(filepath.Join("testdata", "export"))

func exPtr[T any](v T) *T { return &v }

// exItem is a rubric item with the judge's verdict valid (nil: not judged).
func exItem(id int32, typ, text string, weight float64, valid *bool) schema.Item {
	it := schema.Item{ID: id, Type: typ, Text: text, Weight: weight, Polarity: schema.PolarityOf(typ), Valid: valid}
	if valid != nil {
		reason := "the judge's reason for item " + fmt.Sprint(id)
		it.ValidReason = &reason
	}
	return it
}

// rolloutHash is the hash of this build's rollout template, which the
// fixture's rollouts were "sampled" with.
func rolloutHash() string {
	set, err := prompts.Load("")
	if err != nil {
		panic(err)
	}
	return set.Hash(prompts.Rollout)
}

func exProvenance(fp string, day int, judged bool) schema.Provenance {
	p := schema.Provenance{
		RolloutModel: "simulated-rollout", DistillModel: "simulated-distill", RolloutTemplate: rolloutHash(), DistillTemplate: "d1",
		JobFingerprint: fp, SpecVersion: schema.SpecVersion, ToolVersion: "export-test",
		CreatedAt: time.Date(2026, 5, day, 12, 30, 0, 0, time.UTC),
	}
	if judged {
		p.JudgeModel, p.JudgeTemplate = exPtr("simulated-judge"), exPtr("j1")
	}
	return p
}

// exportFixture is a small corpus that exercises every path of the export:
// both styles, all three splits, judged, unjudged and invalid items, items
// whose removal breaks the rubric, empirical figures, satisfaction verdicts,
// a record without a source, and text with markup and non-ASCII letters.
func exportFixture() []schema.Record {
	yes, no := exPtr(true), exPtr(false)
	return []schema.Record{
		{
			ID: "0a1b2c3d4e5f6071", Source: "rubricforge-examples", Split: "train", Style: schema.StyleSRaR,
			Problem: "A club has 24 members. In how many ways can a committee of 3 members be chosen?", Answer: "2024",
			Reference: exPtr("Choose 3 of 24: \\binom{24}{3} = 2024."),
			Rubric: []schema.Item{
				exItem(1, schema.TypeSuggest, "Recognizes that the order of the chosen members does not matter.", 1, yes),
				exItem(2, schema.TypeSuggest, "Computes \\binom{24}{3} = \\frac{24 \\cdot 23 \\cdot 22}{6}.", 1, yes),
				exItem(3, schema.TypePitfall, "Counts ordered selections, 24 \\cdot 23 \\cdot 22 = 12144, as committees.", 1, yes),
				exItem(4, schema.TypeAnswer, "The final answer equals 2024.", 1, yes),
			},
			Rollouts: []schema.Rollout{
				{Index: 0, Text: "### Step 1: order does not matter\n<answer>2024</answer>", ExtractedAnswer: "2024", Correct: true, FormatOK: true, FinishReason: "stop",
					Satisfaction: []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 1}, {ID: 4, Satisfied: true, Step: 0}}},
				{Index: 1, Text: "### Step 1: 24*23*22\n<answer>12144</answer>", ExtractedAnswer: "12144", FormatOK: true, FinishReason: "stop",
					Satisfaction: []schema.Satisfaction{{ID: 3, Satisfied: true, Step: 1}}},
			},
			NCorrect: 1, PassRate: 0.5, Provenance: exProvenance("fp-a", 1, true),
		},
		{
			ID: "1b2c3d4e5f607182", Split: "train", Style: schema.StyleSRaR,
			Problem: "Find the minimum value of x^2 + 6x + 4 over all real numbers x.", Answer: "-5",
			Rubric: []schema.Item{
				exItem(1, schema.TypeSuggest, "Completes the square: x^2 + 6x + 4 = (x + 3)^2 - 5.", 1, yes),
				exItem(2, schema.TypePitfall, "Uses the formatting of the solution    as a criterion.", 1, no),
				exItem(3, schema.TypeBonus, "Notes the minimum is reached at x = -3 & checks it.", 1, yes),
				exItem(4, schema.TypeAnswer, "The final answer equals -5.", 1, yes),
			},
			Rollouts: []schema.Rollout{
				{Index: 0, Text: "### Step 1: (x+3)^2-5\n<answer>-5</answer>", ExtractedAnswer: "-5", Correct: true, FormatOK: true, FinishReason: "stop",
					Satisfaction: []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 1}, {ID: 2, Satisfied: false, Step: -1}, {ID: 3, Satisfied: true, Step: 1}, {ID: 4, Satisfied: true, Step: 0}}},
			},
			NCorrect: 1, PassRate: 1, Provenance: exProvenance("fp-a", 2, true),
		},
		{
			ID: "2c3d4e5f60718293", Source: "rubricforge-examples", Split: "validation", Style: schema.StyleSRaR,
			Problem: "How many zeros does the decimal form of 2024! end with?", Answer: "503",
			Rubric: []schema.Item{
				exItem(1, schema.TypeSuggest, "Counts the factors of 5 with Legendre's formula.", 1, yes),
				exItem(2, schema.TypeAnswer, "The final answer equals 504.", 1, no),
			},
			NCorrect: 0, Provenance: exProvenance("fp-a", 3, true),
		},
		{
			ID: "3d4e5f6071829304", Source: "数学-olympiad", Split: "train", Style: schema.StyleFactualProcess,
			Problem: "三角形の内角の和は何度ですか？ (What is the sum of the interior angles of a triangle, in degrees?)", Answer: "180",
			Reference: exPtr("A line parallel to one side through the opposite vertex shows the angles form a straight angle."),
			Rubric: []schema.Item{
				exItem(1, schema.TypeFactual, "States that the sum is 180°.", 5, nil),
				exItem(2, schema.TypeFactual, "Mentions a straight angle (π radians).", 3, nil),
				exItem(3, schema.TypeProcess, "Draws a parallel line through a vertex and uses alternate angles.", 2, nil),
			},
			NCorrect: 2, PassRate: 1, Provenance: exProvenance("fp-b", 4, false),
		},
		{
			ID: "4e5f607182930415", Source: "rubricforge-examples", Split: "test", Style: schema.StyleSRaR,
			Problem: "Is 91 < 100 & prime? Answer yes or no.", Answer: "no",
			Rubric: []schema.Item{
				exItem(1, schema.TypeSuggest, "Factors 91 = 7 \\cdot 13.", 1, yes),
				exItem(2, schema.TypeAnswer, "The final answer is \"no\".", 1, yes),
			},
			Provenance: exProvenance("fp-a", 5, true),
		},
		{
			ID: "5f60718293041526", Source: "rubricforge-examples", Split: "train", Style: schema.StyleSRaR,
			Problem: "What is the remainder when 2^{10} is divided by 7?", Answer: "2",
			Rubric: []schema.Item{
				withEmpirical(exItem(1, schema.TypeSuggest, "Uses 2^3 = 8 ≡ 1 (mod 7).", 1, yes), 0.75, 0.5, true),
				withEmpirical(exItem(2, schema.TypeSuggest, "Reduces 2^{10} = 2^9 \\cdot 2 ≡ 2.", 1, yes), 0.5, 0.1, false),
				withEmpirical(exItem(3, schema.TypeAnswer, "The final answer equals 2.", 1, yes), 0.5, 1, true),
			},
			Provenance: exProvenance("fp-a", 6, true),
		},
		{
			ID: "60718293a4b5c6d7", Source: "rubricforge-examples", Split: "validation", Style: schema.StyleFactualProcess,
			Problem: "Evaluate 3 + 4 \\cdot 2.", Answer: "11",
			Rubric: []schema.Item{
				exItem(1, schema.TypeFactual, "States the result 11.", 5, yes),
				exItem(2, schema.TypeProcess, "Multiplies before adding.", 3, yes),
				exItem(3, schema.TypeProcess, "Adds first, getting 14.", 1, no),
			},
			Provenance: exProvenance("fp-b", 7, true),
		},
	}
}

func withEmpirical(it schema.Item, sat, corr float64, valid bool) schema.Item {
	it.SatRate, it.Corr, it.EmpiricalValid = &sat, &corr, &valid
	return it
}

// srarOnly keeps the SRaR records of recs.
func srarOnly(recs []schema.Record) []schema.Record {
	return slices.DeleteFunc(slices.Clone(recs), func(r schema.Record) bool { return r.Style != schema.StyleSRaR })
}

// writeExportCorpus writes recs as a run directory at dir, shardRows
// records per shard. The run is written once per test binary for each
// content (runTemplates) and copied: many tests export the same fixture.
func writeExportCorpus(t *testing.T, dir string, recs []schema.Record, shardRows int) {
	t.Helper()
	tmpl, err := runTemplates.get(recs, shardRows)
	if err != nil {
		t.Fatal(err)
	}
	if err := copyRunDir(tmpl, dir); err != nil {
		t.Fatal(err)
	}
}

// runTemplates holds the run directories writeExportCorpus copies, by
// their records and shard size, under one temporary directory that
// TestMain removes.
var runTemplates = &templateRuns{dirs: map[string]string{}}

type templateRuns struct {
	mu   sync.Mutex
	root string
	dirs map[string]string
}

func (tr *templateRuns) get(recs []schema.Record, shardRows int) (string, error) {
	raw, err := json.Marshal(recs)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(fmt.Appendf(raw, "|%d", shardRows))
	key := hex.EncodeToString(sum[:8])
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if dir, ok := tr.dirs[key]; ok {
		return dir, nil
	}
	if tr.root == "" {
		if tr.root, err = os.MkdirTemp("", "corpus-test-runs-"); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(tr.root, key)
	r, err := Open(dir, Options{ShardRows: shardRows, ToolVersion: "export-test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", err
	}
	for i := range recs {
		rec := recs[i]
		if err := r.Append(&rec); err != nil {
			return "", errors.Join(err, r.Close())
		}
	}
	if err := r.Close(); err != nil {
		return "", err
	}
	tr.dirs[key] = dir
	return dir, nil
}

// remove removes the templates (TestMain, after the tests).
func (tr *templateRuns) remove() {
	if tr.root != "" {
		_ = os.RemoveAll(tr.root) // temporary files; nothing to keep
	}
}

// copyRunDir copies the run directory src to dst (made), keeping the
// files' modification times, which the manifest records.
func copyRunDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(to, info.ModTime(), info.ModTime())
	})
}

// readRows reads every data file an export lists as rows of T.
func readRows[T any](t *testing.T, dir string, m *ExportManifest) map[string][]T {
	t.Helper()
	out := map[string][]T{}
	for _, f := range m.Files {
		if err := Scan(filepath.Join(dir, f.File), func(r *T) error { out[f.File] = append(out[f.File], *r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// dirFiles maps every file under dir (relative, slash-separated) to its bytes.
func dirFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonLine(t *testing.T, v any) string {
	t.Helper()
	s, err := marshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join(exportGoldenDir, name+".golden"), got)
}

// exportDump renders an export for a golden file: export.json, the card,
// and every data file's rows as JSON lines (a jsonl file as it is).
func exportDump(t *testing.T, dir string, m *ExportManifest) []byte {
	t.Helper()
	var b bytes.Buffer
	files := dirFiles(t, dir)
	fmt.Fprintf(&b, "== %s\n%s== %s\n%s", ExportManifestName, files[ExportManifestName], DatasetCardName, files[DatasetCardName])
	for _, f := range m.Files {
		fmt.Fprintf(&b, "== %s\n", f.File)
		switch m.Format {
		case FormatJSONL:
			b.Write(files[f.File])
		case FormatVerl:
			dumpRows[VerlRow](t, &b, filepath.Join(dir, f.File))
		case FormatRaR:
			dumpRows[RaRRow](t, &b, filepath.Join(dir, f.File))
		case FormatSRaRLines:
			dumpRows[SRaRLinesRow](t, &b, filepath.Join(dir, f.File))
		}
	}
	return b.Bytes()
}

func dumpRows[T any](t *testing.T, b *bytes.Buffer, path string) {
	t.Helper()
	err := Scan(path, func(r *T) error {
		b.WriteString(jsonLine(t, r) + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readManifestFile(t *testing.T, dir string) ExportManifest {
	t.Helper()
	m, err := ReadExportManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	data, _ := os.ReadFile(filepath.Join(dir, ExportManifestName))
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"format", "spec_version", "source", "job_fingerprints", "valid_only", "splits", "records_in",
		"records_out", "records_dropped", "items_dropped", "duplicates_dropped", "files", "created_at"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("export.json has no %q", key)
		}
	}
	if len(raw) != 13 {
		t.Errorf("export.json has %d keys, the contract names 13", len(raw))
	}
	return m
}
