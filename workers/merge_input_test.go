package workers

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestMergeRefusesWorkersOfOtherInputs: workers that read different input
// (a copy with some answers changed, half of the input) are not merged;
// the refusal names the workers and their files.
func TestMergeRefusesWorkersOfOtherInputs(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 24, sim.Config{})
	// The workers of the input, which each case only reads; each case
	// adds a worker of its own other input.
	dirs := runWorkers(t, f.Job, filepath.Join(f.Dir, "w"), 3)
	for _, tc := range []struct {
		name string
		rows []runtest.Problem
		says string
	}{
		{"answers changed", runtest.ChangedAnswers(f.Rows, 3), "24 rows"},
		{"half of the input", f.Rows[:12], "12 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			other := filepath.Join(base, "other.jsonl")
			runtest.WriteJSONL(t, other, tc.rows)
			w := f.Job
			w.Input.Paths = []string{other}
			w.Out = filepath.Join(base, "part-1-other")
			w.Partition = "1/3"
			runJob(t, w, pipeline.Options{})
			_, err := Merge(t.Context(), []string{dirs[0], w.Out, dirs[2]}, filepath.Join(t.TempDir(), "merged"), MergeOptions{})
			if !errors.Is(err, ErrMergeRefused) {
				t.Fatalf("merged workers of different inputs: %v", err)
			}
			for _, s := range []string{w.Out, dirs[0], other, f.Input, tc.says} {
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
