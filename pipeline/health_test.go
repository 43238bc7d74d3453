package pipeline

import (
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/schema"
)

// TestClientStagesNameTheStylesStages: the endpoint lines of a grounded job
// name the grounded stages that use each endpoint, not the math stages its
// clients are keyed by.
func TestClientStagesNameTheStylesStages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		style, stage string
		want         []string
	}{
		{schema.StyleSRaR, job.StageDistill, []string{job.StageDistill}},
		{schema.StyleSRaR, job.StageRollout, []string{job.StageRollout}},
		{schema.StyleFactualProcess, job.StageJudge, []string{job.StageJudge}},
		{schema.StyleGrounded, job.StageDistill, []string{job.StageAnalyze, job.StageSynthesize, job.StageEnrich}},
		{schema.StyleGrounded, job.StageRollout, []string{"answer"}},
		{schema.StyleGrounded, job.StageJudge, []string{job.StageJudge}},
		{schema.StyleGrounded, job.StageEmpirical, []string{job.StageEmpirical}},
	} {
		if got := clientStages(tc.style, tc.stage); !slices.Equal(got, tc.want) {
			t.Errorf("clientStages(%s, %s) = %v, want %v", tc.style, tc.stage, got, tc.want)
		}
	}
}
