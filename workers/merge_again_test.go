package workers

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestMergeAgainRefusesWorkersOfOtherContent: a merge into an --out that
// an earlier merge made checks the workers' input against what --out
// records, as the first merge checks the workers against each other:
// workers that read other content under the same path and job
// fingerprint are refused, naming --out and the file, and --out keeps its
// records and its manifest's inputs.
func TestMergeAgainRefusesWorkersOfOtherContent(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 12, sim.Config{})
	out := filepath.Join(t.TempDir(), "merged")
	first := runWorkers(t, f.Job, filepath.Join(t.TempDir(), "a"), 3)
	if _, err := Merge(t.Context(), first, out, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := corpus.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	runtest.WriteJSONL(t, f.Input, runtest.ChangedAnswers(f.Rows, 3)) // the same path, other content
	second := runWorkers(t, f.Job, filepath.Join(t.TempDir(), "b"), 3)
	_, err = Merge(t.Context(), second, out, MergeOptions{})
	if !errors.Is(err, ErrMergeRefused) {
		t.Fatalf("merged workers of other content into %s: %v", out, err)
	}
	for _, s := range []string{out, f.Input} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the refusal does not name %q:\n%v", s, err)
		}
	}
	after, err := corpus.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if after.Rows != before.Rows || len(after.Inputs) != 1 || after.Inputs[0].XXHash64 != before.Inputs[0].XXHash64 {
		t.Errorf("--out changed: %d rows (was %d), inputs %+v (were %+v)", after.Rows, before.Rows, after.Inputs, before.Inputs)
	}
	// The same workers merged again are welcome: nothing to add.
	if _, err := Merge(t.Context(), first, out, MergeOptions{}); err != nil {
		t.Errorf("merging the first workers again: %v", err)
	}
}
