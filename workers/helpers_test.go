package workers

import (
	"context"
	"testing"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
)

func runJob(t testing.TB, j job.Job, opt pipeline.Options) *pipeline.Report {
	t.Helper()
	rep, err := pipeline.Run(context.Background(), j, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}
