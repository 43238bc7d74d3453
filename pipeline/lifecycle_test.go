package pipeline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// TestRunMergesSmallShards: a run with small shards (here from a first
// session with shard_rows 4, as checkpoints leave them) merges them into
// full shards when it ends, and every record is still there once.
func TestRunMergesSmallShards(t *testing.T) {
	t.Parallel()
	// Every problem kept, two rollouts each: 24 records in shards of 4, as
	// many as 40 problems with the default selection made, at fewer requests.
	f := newFixture(t, 24, sim.Config{})
	job := f.job
	job.Rollout.N = 2
	job.Selection.MinCorrect, job.Selection.MinIncorrect = 0, 0
	job.Output.ShardRows = 4
	runJob(t, job, Options{HTTPClient: runtest.InProcess})
	before, err := corpus.ReadManifest(job.Out)
	if err != nil {
		t.Fatal(err)
	}
	job.Output.ShardRows = 16
	var log bytes.Buffer
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess, Logger: runtest.TextLogger(&log)})
	if !strings.Contains(log.String(), "merged small shards") {
		t.Fatalf("no merge logged; the test needs checkpoints that leave small shards:\n%s", log.String())
	}
	m, err := corpus.ReadManifest(job.Out)
	if err != nil {
		t.Fatal(err)
	}
	small := 0
	for _, s := range m.Shards {
		if s.Rows < int64(job.Output.ShardRows)/2 {
			small++
		}
	}
	if small > 1 || len(m.Shards) >= len(before.Shards) {
		t.Errorf("%d shards before, %d after, %d of them small: %+v", len(before.Shards), len(m.Shards), small, m.Shards)
	}
	if v, err := corpus.Verify(job.Out); err != nil {
		t.Errorf("the merged corpus does not verify: %v (%+v)", err, v)
	}
	checkAccounted(t, job.Out, f.rows, rep)
}

// TestFailedStartLeavesNothing: a start that fails before any work (the
// cache is held by another process) leaves no job.yaml, manifest, shards
// or lock behind, so the corrected command meets the directory as it was.
func TestFailedStartLeavesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, sim.Config{})
	if err := os.MkdirAll(f.job.Out, 0o755); err != nil {
		t.Fatal(err)
	}
	holder, err := cache.Open(corpus.Layout{Dir: f.job.Out}.Cache())
	if err != nil {
		t.Fatal(err)
	}
	_, runErr := Run(context.Background(), f.job, Options{HTTPClient: runtest.InProcess})
	holder.Close()
	if runErr == nil {
		t.Fatal("a run whose cache is held by another process started")
	}
	entries, err := os.ReadDir(f.job.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); !strings.HasPrefix(name, corpus.CacheName) {
			t.Errorf("a failed start left %s behind (error: %v)", name, runErr)
		}
	}
	runJob(t, f.job, Options{HTTPClient: runtest.InProcess})
}

// TestForceKeepsTheJobHistory: a job forced into a directory made by
// another is recorded in the manifest's history with its settings; status
// says the corpus is mixed and what differs; job.yaml keeps the first job.
func TestForceKeepsTheJobHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 12, sim.Config{})
	first := f.job
	runtest.WriteJSONL(t, f.input, f.rows[:6]) // the first job sees half the input
	runJob(t, first, Options{HTTPClient: runtest.InProcess})
	runtest.WriteJSONL(t, f.input, f.rows)
	yamlBefore, err := os.ReadFile(corpus.Layout{Dir: first.Out}.Job())
	if err != nil {
		t.Fatal(err)
	}

	second := f.job
	warmer := 0.7
	second.Rollout.Temperature = &warmer
	if _, err := Run(context.Background(), second, Options{HTTPClient: runtest.InProcess}); !errors.Is(err, ErrJobChanged) {
		t.Fatalf("a changed job without --force: %v", err)
	}
	runJob(t, second, Options{HTTPClient: runtest.InProcess, Force: true})

	m, err := corpus.ReadManifest(first.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Jobs) != 2 || !m.Mixed() || m.Jobs[0].Settings["rollout.temperature"] == m.Jobs[1].Settings["rollout.temperature"] {
		t.Fatalf("job history %+v; want two jobs with records, the second at temperature 0.7", m.Jobs)
	}
	if after, _ := os.ReadFile(corpus.Layout{Dir: first.Out}.Job()); !bytes.Equal(after, yamlBefore) {
		t.Error("job.yaml was rewritten to the forced job's settings")
	}
	st, err := ReadStatus(first.Out)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	st.WriteText(&text)
	if !strings.Contains(text.String(), "mixed: records of 2 jobs") || !strings.Contains(text.String(), "rollout.temperature") {
		t.Errorf("status does not say the corpus is mixed and how:\n%s", text.String())
	}
}

// TestStatusSeesADeadRun: a report that says "running" while no process
// holds the run directory is shown as stopped, with how to resume.
func TestStatusSeesADeadRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, sim.Config{})
	rep := runJob(t, f.job, Options{HTTPClient: runtest.InProcess})
	rep.Status = StatusRunning // as a killed run leaves it
	if err := WriteReport(fsys.OS, f.job.Out, rep); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(f.job.Out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Report.Status != StatusStopped || st.Report.StoppedBy != StopDied || !strings.Contains(st.Report.StopReason, "run the same command again") {
		t.Errorf("status of a dead run: %s by %q (%s)", st.Report.Status, st.Report.StoppedBy, st.Report.StopReason)
	}
	if _, err := os.Stat(filepath.Join(f.job.Out, corpus.LockName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}
