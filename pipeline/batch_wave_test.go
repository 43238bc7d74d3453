package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestBatchWaveSettlesAProblemOnce: a problem whose rollouts are split over
// two batch files is let go on by each batch that answers them; once it
// is settled (left out, failed or written) a later batch's answer must not
// run it again, or the run counts it twice and ends "stopped" with -1
// problems pending. With 25 rows a file, the problem at each file's end
// has its four rollouts in two batches (15 such problems of 100). Whether the second batch is
// ingested in time for the wave the first started depends on timing, so
// without the settled set this test failed about every other run.
func TestBatchWaveSettlesAProblemOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(100)
	input := filepath.Join(dir, "in.jsonl")
	runtest.WriteJSONL(t, input, rows)
	_, url := runtest.BatchSim(t, rows, sim.Config{Seed: 5})
	job := runtest.BatchJob(input, filepath.Join(dir, "out"), url, job.StageRollout, job.StageDistill, job.StageJudge)
	job.Empirical.Enabled = false
	job.Batch.MaxRequests = 25
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("run %s: %s", rep.Status, rep.StopReason)
	}
	checkAccounted(t, job.Out, rows, rep)
	b, err := os.ReadFile(filepath.Join(job.Out, "failures.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		id, _, _ := strings.Cut(strings.TrimPrefix(line, `{"id":"`), `"`)
		if seen[id] {
			t.Errorf("problem %s settled twice in one session:\n%s", id, b)
		}
		seen[id] = true
	}
	if rep.Problems.LeftOut == 0 {
		t.Fatal("no problem left out: the test does not exercise a settled problem")
	}
}
