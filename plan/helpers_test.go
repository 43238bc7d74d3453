package plan

import (
	"context"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/schema"
)

// runJob is distill run of job, as the real run after a plan.
func runJob(t testing.TB, j job.Job, opt pipeline.Options) *pipeline.Report {
	t.Helper()
	rep, err := pipeline.Run(context.Background(), j, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// checkGroundedAccounted is runtest.CheckGroundedAccounted of a run's report.
func checkGroundedAccounted(t testing.TB, j job.Job, rep *pipeline.Report) map[string]*schema.Record {
	t.Helper()
	p := rep.Problems
	return runtest.CheckGroundedAccounted(t, j, runtest.GroundedCounts{Unique: p.Unique, Done: p.Done, Failed: p.Failed, LeftOut: p.LeftOut, Pending: p.Pending, FailuresByStage: rep.FailuresByStage})
}
