package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// compress writes data to path, gzip- or zstd-compressed.
func compress(t *testing.T, path, kind string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	switch kind {
	case "gzip":
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "zstd":
		w, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		w.Close()
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWrongInputStopsEarly: an input whose first lines are all bad stops the
// run before it starts, with a usage error that says what the lines hold;
// the run directory is not created.
func TestWrongInputStopsEarly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := runtest.MakeProblems(3)
	var goodJSONL bytes.Buffer
	for _, r := range good {
		line, _ := json.Marshal(r)
		goodJSONL.Write(append(line, '\n'))
	}
	lines := func(n int, format string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, format+"\n", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name  string
		write func(path string)
		want  []string // empty: accepted
	}{
		{"other field names", func(p string) {
			os.WriteFile(p, []byte(lines(150, `{"question": "q%d", "gold": "1", "id": "x"}`)), 0o644)
		}, []string{"first 100 lines", `"gold", "id", "question"`, "--field-problem", `missing field "problem"`}},
		{"a short file, all bad", func(p string) {
			os.WriteFile(p, []byte(lines(3, `{"prompt": "q%d", "answer": "1"}`)), 0o644)
		}, []string{"first 3 lines", `"answer", "prompt"`}},
		{"gzip named .jsonl", func(p string) { compress(t, p, "gzip", goodJSONL.Bytes()) }, []string{"looks like gzip", ".gz"}},
		{"zstd named .jsonl", func(p string) { compress(t, p, "zstd", goodJSONL.Bytes()) }, []string{"looks like zstd", ".zst"}},
		{"Parquet named .jsonl", func(p string) {
			type row struct {
				Problem string `parquet:"problem"`
			}
			parquet.WriteFile(p, []row{{"x"}})
		}, []string{"looks like Parquet", "--input-format parquet"}},
		{"not JSON", func(p string) { os.WriteFile(p, []byte(lines(5, "q%d,1")), 0o644) }, []string{"not JSON objects"}},
		{"missing file", func(p string) {}, []string{"does not exist"}},
		{"99 bad lines, then a problem", func(p string) {
			os.WriteFile(p, append([]byte(lines(99, `{"q": %d}`)), goodJSONL.Bytes()...), 0o644)
		}, nil},
		{"an empty file", func(p string) { os.WriteFile(p, nil, 0o644) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
			tc.write(input)
			jb := runtest.TestJob(input, filepath.Join(dir, "run-"+strings.ReplaceAll(tc.name, " ", "_")), "http://127.0.0.1:1/v1")
			err := source.CheckInputs(source.SpecOf(&jb))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ue *job.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want a usage error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if _, err := Run(context.Background(), jb, Options{HTTPClient: runtest.InProcess}); !errors.As(err, &ue) {
				t.Errorf("Run: %v, want the usage error", err)
			}
			if _, err := os.Stat(jb.Out); !os.IsNotExist(err) {
				t.Errorf("the run directory was created for an unusable input: %v", err)
			}
		})
	}
}

// TestCompressedInputs: .jsonl.gz and .jsonl.zst inputs are read, and their
// rows counted up front.
func TestCompressedInputs(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"gzip", "zstd"} {
		f := newFixture(t, 9, sim.Config{})
		ext := map[string]string{"gzip": ".jsonl.gz", "zstd": ".jsonl.zst"}[kind]
		plain, err := os.ReadFile(f.input)
		if err != nil {
			t.Fatal(err)
		}
		input := strings.TrimSuffix(f.input, ".jsonl") + ext
		compress(t, input, kind, append(plain, '\n', ' ', '\n')) // blank lines are not rows
		job := f.job
		job.Input.Paths = []string{input}
		n, err := source.CountRows(context.Background(), source.SpecOf(&job))
		if err != nil || n != int64(len(f.rows)) {
			t.Errorf("%s: counted %d rows (%v), want %d", kind, n, err, len(f.rows))
		}
		rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
		checkAccounted(t, job.Out, f.rows, rep)
		if rep.Problems.InputLines != int64(len(f.rows)) {
			t.Errorf("%s: report input_lines %d, want %d", kind, rep.Problems.InputLines, len(f.rows))
		}
	}
}

func TestParquetMissingColumnNamesTheColumns(t *testing.T) {
	t.Parallel()
	type row struct {
		Question string `parquet:"question"`
		Gold     string `parquet:"gold"`
	}
	path := filepath.Join(t.TempDir(), "in.parquet")
	if err := parquet.WriteFile(path, []row{{"q", "1"}}); err != nil {
		t.Fatal(err)
	}
	j := runtest.TestJob(path, "run", "http://x/v1")
	err := source.CheckInputs(source.SpecOf(&j))
	var ue *job.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `no column "problem"`) || !strings.Contains(err.Error(), `"question", "gold"`) {
		t.Errorf("missing column: %v", err)
	}
}
