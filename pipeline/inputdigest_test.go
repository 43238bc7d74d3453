package pipeline

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/llmtest"
)

// changedAnswers is rows with the answers of the first n changed: a copy of
// the input that is not the input.
func changedAnswers(rows []testProblem, n int) []testProblem {
	out := append([]testProblem(nil), rows...)
	for i := range n {
		out[i].Answer += "1"
	}
	return out
}

// TestMergeRefusesWorkersOfOtherInputs: workers that read different input
// (a copy with some answers changed, half of the input) are not merged;
// the refusal names the workers and their files.
func TestMergeRefusesWorkersOfOtherInputs(t *testing.T) {
	f := newFixture(t, 24, llmtest.Config{})
	for _, tc := range []struct {
		name string
		rows []testProblem
		says string
	}{
		{"answers changed", changedAnswers(f.rows, 3), "24 rows"},
		{"half of the input", f.rows[:12], "12 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "w")
			dirs := runWorkers(t, f.job, base, 3)
			other := filepath.Join(t.TempDir(), "other.jsonl")
			writeJSONL(t, other, tc.rows)
			w := f.job
			w.Input.Paths = []string{other}
			w.Out = filepath.Join(base, "part-1-other")
			w.Partition = "1/3"
			runJob(t, w, Options{})
			_, err := Merge(t.Context(), []string{dirs[0], w.Out, dirs[2]}, filepath.Join(t.TempDir(), "merged"), MergeOptions{})
			if !errors.Is(err, ErrMergeRefused) {
				t.Fatalf("merged workers of different inputs: %v", err)
			}
			for _, s := range []string{w.Out, dirs[0], other, f.input, tc.says} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the refusal does not name %q:\n%v", s, err)
				}
			}
			ws, err := ReadWorkers([]string{dirs[0], w.Out, dirs[2]})
			if err != nil {
				t.Fatal(err)
			}
			var status strings.Builder
			ws.WriteText(&status)
			if !strings.Contains(status.String(), "input differs: "+w.Out+" read other input than "+dirs[0]) {
				t.Errorf("distill status over the workers does not say their input differs:\n%s", status.String())
			}
		})
	}
}

// TestResumeRefusesAnotherInput: a run directory resumed with an input of
// other content is refused before anything is sent, naming the file (the
// job's fingerprint holds the source's name, not its content); an input
// that only grew resumes and takes the new rows; --force resumes anyway.
func TestResumeRefusesAnotherInput(t *testing.T) {
	f := newFixture(t, 20, llmtest.Config{KeepLog: true}) // f.input holds 20 rows
	input16 := filepath.Join(f.dir, "in16.jsonl")
	writeJSONL(t, input16, f.rows[:16])
	job := f.job
	job.Input.Paths = []string{input16}
	first := runJob(t, job, Options{})
	man, err := corpus.ReadManifest(job.Out)
	if err != nil || len(man.Inputs) != 1 || man.Inputs[0].Rows != 16 || man.Inputs[0].XXHash64 == "" {
		t.Fatalf("the manifest does not record the input read: %+v (%v)", man.Inputs, err)
	}

	changed := filepath.Join(f.dir, "changed.jsonl")
	writeJSONL(t, changed, changedAnswers(f.rows[:16], 2))
	j := job
	j.Input.Paths = []string{changed}
	from := len(f.srv.Log())
	_, err = Run(t.Context(), j, Options{})
	if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), changed) || !strings.Contains(err.Error(), input16) {
		t.Fatalf("a resume with other input content: %v; want ErrInputChanged naming both files", err)
	}
	if sent := len(f.srv.Log()) - from; sent != 0 {
		t.Errorf("the refused resume sent %d requests", sent)
	}

	// The same rows with rows appended (f.input): the new rows are new work.
	j.Input.Paths = []string{f.input}
	rep := runJob(t, j, Options{})
	if rep.Problems.AlreadyDone != first.Problems.Done || rep.Problems.Unique != 20 {
		t.Errorf("a grown input: %d already done (want %d), %d unique (want 20)", rep.Problems.AlreadyDone, first.Problems.Done, rep.Problems.Unique)
	}
	if man, _ := corpus.ReadManifest(job.Out); len(man.Inputs) != 1 || man.Inputs[0].Rows != 20 {
		t.Errorf("after the grown input the manifest records %+v", man.Inputs)
	}

	j.Input.Paths = []string{changed}
	if _, err := Run(t.Context(), j, Options{Force: true}); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// BenchmarkInputDigest measures the pass that hashes the input and counts
// its rows (checkInput) against counting alone (what a session did before
// inputs were recorded), over a 64 MiB JSONL file.
func BenchmarkInputDigest(b *testing.B) {
	path := filepath.Join(b.TempDir(), "in.jsonl")
	writeJSONL(b, path, makeProblems(600_000))
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	in := inputSpec{Input: job.Input{Paths: []string{path}, Format: "auto"}}
	b.Run("count", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			if _, err := countRows(b.Context(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("digest+count", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			if _, err := digestInputs(b.Context(), in, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDigestFile: the digest is of the file's bytes (compressed ones as
// stored), rows are its non-blank lines decompressed, and the prefix hash
// is of its first at bytes, "" when it is shorter.
func TestDigestFile(t *testing.T) {
	dir := t.TempDir()
	text := "{\"a\":1}\n\n{\"a\":2}\n{\"a\":3}"
	plain := filepath.Join(dir, "in.jsonl")
	os.WriteFile(plain, []byte(text), 0o644)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	packed := filepath.Join(dir, "in.jsonl.gz")
	os.WriteFile(packed, gz.Bytes(), 0o644)
	hash := func(b []byte) string { return fmt.Sprintf("%016x", xxhash.Sum64(b)) }
	in := inputSpec{Input: job.Input{Format: "auto"}}
	for _, tc := range []struct {
		name, path string
		bytes      []byte
		at         int64
	}{
		{"plain", plain, []byte(text), -1},
		{"plain, a prefix", plain, []byte(text), 8},
		{"plain, the whole file as the prefix", plain, []byte(text), int64(len(text))},
		{"plain, shorter than the prefix", plain, []byte(text), int64(len(text)) + 1},
		{"gzip", packed, gz.Bytes(), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, prefix, err := digestFile(t.Context(), tc.path, in, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if f.Rows != 3 || f.Bytes != int64(len(tc.bytes)) || f.XXHash64 != hash(tc.bytes) {
				t.Errorf("digest %+v, want 3 rows, %d bytes, %s", f, len(tc.bytes), hash(tc.bytes))
			}
			want := ""
			if tc.at >= 0 && tc.at <= int64(len(tc.bytes)) {
				want = hash(tc.bytes[:tc.at])
			}
			if prefix != want {
				t.Errorf("prefix %q, want %q", prefix, want)
			}
		})
	}
}
