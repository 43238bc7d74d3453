package pipeline

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/source"

	"gopkg.in/yaml.v3"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/prompts"
)

// fullJob is a normalized job with every stage on, stamped like a run does.
func fullJob(t *testing.T) job.Job {
	t.Helper()
	j := runtest.TestJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
	j.Judge.Enabled, j.Empirical.Enabled = true, true
	j.Normalize()
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	j.StampVersions(ps, source.CutterVersion)
	return j
}

// TestEmptyRunDirectoryTakesChangedJob: a start that produced no record (a
// wrong model, a wrong field mapping) does not lock in its settings.
func TestEmptyRunDirectoryTakesChangedJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, sim.Config{})
	jb := f.job
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"The model does not exist.","type":"invalid_request_error","code":"model_not_found"}}`, http.StatusNotFound)
	}))
	defer notFound.Close()

	wrongModel := jb
	wrongModel.Rollout.BaseURL, wrongModel.Rollout.Model, wrongModel.Prices = notFound.URL+"/v1", "no-such-model", nil
	if _, err := Run(context.Background(), wrongModel, Options{HTTPClient: runtest.InProcess}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a wrong model should stop the run with a 404: %v", err)
	}
	wrongAnswers := jb
	wrongAnswers.Input.Fields.Answer = "problem" // every rollout is wrong: all left out by selection
	rep := runJob(t, wrongAnswers, Options{HTTPClient: runtest.InProcess})
	if rep.Problems.Done != 0 || rep.Problems.LeftOut == 0 {
		t.Fatalf("the wrong mapping should leave every problem out: %+v", rep.Problems)
	}

	var logs runtest.SyncBuffer
	rep, err := Run(context.Background(), jb, Options{HTTPClient: runtest.InProcess, Logger: runtest.TextLogger(&logs)})
	if err != nil {
		t.Fatalf("a directory with 0 records refused a changed job: %v", err)
	}
	if !strings.Contains(logs.String(), "holds no records yet") || !strings.Contains(logs.String(), "input.fields.answer: problem → answer") {
		t.Errorf("taking the changed job is not said in one line naming the change:\n%s", logs.String())
	}
	if p := rep.Problems; p.Done == 0 || p.Done+p.Failed+p.LeftOut != int64(len(f.rows)) || p.Pending != 0 || len(runtest.ReadCorpus(t, jb.Out)) != int(p.Done) {
		t.Errorf("after the changed job took the directory: %+v", p)
	}
	written, err := job.LoadJobFile(jobPath(jb.Out))
	if err != nil || written.Input.Fields.Answer != "answer" {
		t.Errorf("job.yaml does not hold the job that took the directory: %v %q", err, written.Input.Fields.Answer)
	}
}

// TestForceKeepsTheFirstJobYAML: --force mixes two jobs in one directory, and
// job.yaml keeps the settings of the first, not silently the last.
func TestForceKeepsTheFirstJobYAML(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, sim.Config{})
	jb := f.job
	runJob(t, jb, Options{HTTPClient: runtest.InProcess})
	first, err := os.ReadFile(jobPath(jb.Out))
	if err != nil {
		t.Fatal(err)
	}
	changed := jb
	changed.Rollout.N = 6
	changed.Distill.RepairAttempts = 3
	_, err = Run(context.Background(), changed, Options{HTTPClient: runtest.InProcess})
	if !errors.Is(err, ErrJobChanged) {
		t.Fatalf("changed job: %v, want ErrJobChanged", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if !slices.Contains(lines, "  rollout.n: 4 → 6") || !slices.Contains(lines, "  distill.repair_attempts: 2 → 3") {
		t.Errorf("the refusal does not give one line per changed setting:\n%s", err)
	}
	if _, err := Run(context.Background(), changed, Options{HTTPClient: runtest.InProcess, Force: true}); err != nil {
		t.Fatalf("--force: %v", err)
	}
	after, _ := os.ReadFile(jobPath(jb.Out))
	if string(after) != string(first) {
		t.Error("--force rewrote job.yaml to the last settings")
	}
	var kept job.Job
	if err := yaml.Unmarshal(after, &kept); err != nil || kept.Rollout.N != 4 {
		t.Errorf("job.yaml lost the first job: n=%d err=%v", kept.Rollout.N, err)
	}
}
