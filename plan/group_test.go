package plan

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestPlanProjectsGroupJudging: with judge.group the plan's pilot judges a
// record's rollouts in one request, so the empirical stage's projection
// has fewer requests (one per record instead of one per rollout) and fewer
// prompt tokens (the rubric sent once for the group).
func TestPlanProjectsGroupJudging(t *testing.T) {
	t.Parallel()
	rows := planProblems(20)
	project := func(group bool) corpus.StageProjection {
		dir := t.TempDir()
		input := filepath.Join(dir, "in.jsonl")
		runtest.WriteJSONL(t, input, rows)
		srv := sim.New(sim.Config{Answers: runtest.AnswersOf(rows), Seed: 7})
		t.Cleanup(srv.Close)
		jb := runtest.TestJob(input, filepath.Join(dir, "run"), "http://sim.invalid/v1")
		jb.Empirical.Enabled = true
		jb.Judge.Group = group
		plan, err := Run(context.Background(), jb, pipeline.Options{HTTPClient: &http.Client{Transport: srv.Transport()}}, Options{Sample: 6})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range plan.Stages {
			if s.Stage == job.StageEmpirical {
				return s
			}
		}
		t.Fatalf("no empirical stage in the plan: %+v", plan.Stages)
		return corpus.StageProjection{}
	}
	alone, together := project(false), project(true)
	if together.Requests.Value*2 > alone.Requests.Value || together.PromptTokens.Value >= alone.PromptTokens.Value {
		t.Errorf("empirical stage projected with judge.group: %.0f requests, %.0f prompt tokens; without: %.0f requests, %.0f prompt tokens; want fewer of both (at most half the requests)",
			together.Requests.Value, together.PromptTokens.Value, alone.Requests.Value, alone.PromptTokens.Value)
	}
}
