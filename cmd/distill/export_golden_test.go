package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/golden"
)

const (
	demoJobFile  = "../../examples/demo.yaml"
	demoProblems = "../../examples/problems.jsonl"
	demoGolden   = "testdata/export-demo"
)

// buildDemoCorpus runs the demo job (examples/demo.yaml over
// examples/problems.jsonl, as `make demo` does) with the built distill
// against the built simllm (the corpus is setup: builtsim_test.go), with
// simllm's defaults (seed 0) but without the demo's injected faults and
// latency, so that the corpus is the same on every run.
func buildDemoCorpus(t *testing.T, dir string) string {
	t.Helper()
	bins := buildBins(t)
	url, stop, err := startSimllm(bins.simllm, []string{"-problems", demoProblems})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "demo")
	// Which records share a shard (each shard is sorted by id) depends on
	// the order problems finish and on when checkpoints commit a partial
	// shard. One problem at a time and no checkpoint make both the same on
	// every run: shards of 25 records taken in input order (the demo's
	// output.shard_rows). Neither setting is part of the job fingerprint.
	cmd := exec.Command(bins.distill, "run", "--config", demoJobFile, "--out", out, "--base-url", url,
		"--problems-in-flight", "1", "--checkpoint-interval", "1h", "--quiet")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the demo corpus: %v\n%s", errors.Join(err, stop()), msg)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExportGoldenDemo exports the demo corpus in every format through the
// distill export command and compares each export (export.json, the dataset
// card, every data file's rows as JSON lines) with a golden file.
func TestExportGoldenDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runDir := buildDemoCorpus(t, dir)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"verl", []string{"--format", "verl"}},
		{"verl-valid-only", []string{"--format", "verl", "--valid-only"}},
		{"rar", []string{"--format", "rar"}},
		{"srar-lines", []string{"--format", "srar-lines"}},
		{"jsonl", []string{"--format", "jsonl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "export-"+tc.name)
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"export", runDir, "--out", out}, tc.args...), &stdout, &stderr); code != exitOK {
				t.Fatalf("export: exit %d\n%s", code, stderr.String())
			}
			got := normalizeDemoExport(dumpExport(t, out), dir, tc.args[1])
			golden.Check(t, filepath.Join(demoGolden, tc.name+".golden"), got)
		})
	}
}

// dumpExport renders an export as text: export.json, the card, then each
// data file listed in export.json: for parquet the file's own schema (so a
// renamed or retyped column shows even though the rows are read back with
// the same struct that wrote them) and its rows as JSON lines read back with
// corpus.Scan into the format's row type; jsonl as it is.
func dumpExport(t *testing.T, out string) []byte {
	t.Helper()
	m, err := corpus.ReadExportManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, name := range []string{corpus.ExportManifestName, corpus.DatasetCardName} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s\n%s", name, data)
	}
	for _, f := range m.Files {
		fmt.Fprintf(&b, "== %s\n", f.File)
		path := filepath.Join(out, f.File)
		if m.Format != corpus.FormatJSONL {
			b.WriteString(parquetSchema(t, path) + "\n")
		}
		switch m.Format {
		case corpus.FormatVerl:
			dumpParquetRows[corpus.VerlRow](t, &b, path)
		case corpus.FormatRaR:
			dumpParquetRows[corpus.RaRRow](t, &b, path)
		case corpus.FormatSRaRLines:
			dumpParquetRows[corpus.SRaRLinesRow](t, &b, path)
		case corpus.FormatJSONL:
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		default:
			t.Fatalf("export.json names format %q", m.Format)
		}
	}
	return b.Bytes()
}

func parquetSchema(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f.Schema().String()
}

func dumpParquetRows[T any](t *testing.T, b *bytes.Buffer, path string) {
	t.Helper()
	err := corpus.Scan(path, func(r *T) error {
		var line bytes.Buffer
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			return err
		}
		b.Write(line.Bytes())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The fields of an export that legitimately differ between two runs of
// this test; normalizeDemoExport replaces their values:
//   - created_at: the time the demo corpus was built (export.json's
//     created_at, the card's "records created", every jsonl record's
//     provenance.created_at);
//   - the temporary directory: absolute paths of the run and export
//     directories (export.json's source, the card's command, source and
//     load_dataset line);
//   - the program's version: provenance.tool_version in jsonl records and
//     the card's "tool versions";
//   - jsonl only: usage.cost_usd, a sum of per-request costs in the order
//     a problem's requests finished, so its last bits vary: rounded to 9
//     significant digits;
//   - jsonl only: each file's bytes and xxhash64 in export.json and the
//     card's bytes per split, since the files hold created_at, whose RFC 3339
//     text varies in length. Parquet files hold no timestamp: their sizes and
//     hashes stay in the golden files.
var (
	demoTimestamp  = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	demoToolVer    = regexp.MustCompile(`"tool_version":"[^"]*"`)
	demoCardToolV  = regexp.MustCompile("(?m)^- tool versions: .*$")
	demoFileBytes  = regexp.MustCompile(`("bytes": )\d+(,\s*"xxhash64": )"[0-9a-f]{16}"`)
	demoCost       = regexp.MustCompile(`"cost_usd":[-+0-9.eE]+`)
	demoSplitBytes = regexp.MustCompile(`(?m)^(\| [a-z]+ \| \d+ \| \d+ \| )\d+ \|$`)
)

func normalizeDemoExport(dump []byte, tmp, format string) []byte {
	s := strings.ReplaceAll(string(dump), tmp, "$TMP")
	s = demoTimestamp.ReplaceAllString(s, "$$TIME")
	s = demoToolVer.ReplaceAllString(s, `"tool_version":"$$VERSION"`)
	s = demoCardToolV.ReplaceAllString(s, "- tool versions: $$VERSION")
	if format == corpus.FormatJSONL {
		s = demoCost.ReplaceAllStringFunc(s, roundCost)
		s = demoFileBytes.ReplaceAllString(s, `${1}$$BYTES${2}"$$XXHASH64"`)
		s = demoSplitBytes.ReplaceAllString(s, `${1}$$BYTES |`)
	}
	return []byte(s)
}

func roundCost(field string) string {
	key, num, _ := strings.Cut(field, ":")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return field
	}
	return key + ":" + strconv.FormatFloat(v, 'g', 9, 64)
}
