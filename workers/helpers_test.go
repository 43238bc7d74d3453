package workers

import (
	"context"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
)

// runJob runs j to the end. Its requests reach the test's simulated
// endpoint in process (runtest.InProcess): the subject of these tests is
// what the workers leave on disk and the merge of it, not HTTP.
func runJob(t testing.TB, j job.Job, opt pipeline.Options) *pipeline.Report {
	t.Helper()
	if opt.HTTPClient == nil {
		opt.HTTPClient = runtest.InProcess
	}
	rep, err := pipeline.Run(context.Background(), j, opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}
