package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestResumeRefusesAnotherInput: a run directory resumed with an input of
// other content is refused before anything is sent, naming the file (the
// job's fingerprint holds the source's name, not its content); an input
// that only grew resumes and takes the new rows; --force resumes anyway.
func TestResumeRefusesAnotherInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20, sim.Config{KeepLog: true}) // f.input holds 20 rows
	input16 := filepath.Join(f.dir, "in16.jsonl")
	runtest.WriteJSONL(t, input16, f.rows[:16])
	job := f.job
	job.Input.Paths = []string{input16}
	first := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	man, err := corpus.ReadManifest(job.Out)
	if err != nil || len(man.Inputs) != 1 || man.Inputs[0].Rows != 16 || man.Inputs[0].XXHash64 == "" {
		t.Fatalf("the manifest does not record the input read: %+v (%v)", man.Inputs, err)
	}

	changed := filepath.Join(f.dir, "changed.jsonl")
	runtest.WriteJSONL(t, changed, runtest.ChangedAnswers(f.rows[:16], 2))
	j := job
	j.Input.Paths = []string{changed}
	from := len(f.srv.Log())
	_, err = Run(t.Context(), j, Options{HTTPClient: runtest.InProcess})
	if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), changed) || !strings.Contains(err.Error(), input16) {
		t.Fatalf("a resume with other input content: %v; want ErrInputChanged naming both files", err)
	}
	if sent := len(f.srv.Log()) - from; sent != 0 {
		t.Errorf("the refused resume sent %d requests", sent)
	}

	// The same rows with rows appended (f.input): the new rows are new work.
	j.Input.Paths = []string{f.input}
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	if rep.Problems.AlreadyDone != first.Problems.Done || rep.Problems.Unique != 20 {
		t.Errorf("a grown input: %d already done (want %d), %d unique (want 20)", rep.Problems.AlreadyDone, first.Problems.Done, rep.Problems.Unique)
	}
	if man, _ := corpus.ReadManifest(job.Out); len(man.Inputs) != 1 || man.Inputs[0].Rows != 20 {
		t.Errorf("after the grown input the manifest records %+v", man.Inputs)
	}

	j.Input.Paths = []string{changed}
	if _, err := Run(t.Context(), j, Options{HTTPClient: runtest.InProcess, Force: true}); err != nil {
		t.Errorf("--force: %v", err)
	}
}

// BenchmarkInputDigest measures the pass that hashes the input and counts
// its rows (checkInput) against counting alone (what a session did before
// inputs were recorded), over a 64 MiB JSONL file.
func BenchmarkInputDigest(b *testing.B) {
	path := filepath.Join(b.TempDir(), "in.jsonl")
	runtest.WriteJSONL(b, path, runtest.MakeProblems(600_000))
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	in := source.Spec{Input: job.Input{Paths: []string{path}, Format: "auto"}}
	b.Run("count", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			if _, err := source.CountRows(b.Context(), in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("digest+count", func(b *testing.B) {
		b.SetBytes(st.Size())
		for b.Loop() {
			if _, err := source.DigestInputs(b.Context(), in, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
