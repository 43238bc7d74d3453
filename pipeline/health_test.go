package pipeline

import (
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestClientStagesNameTheStylesStages: the endpoint lines of a grounded job
// name the grounded stages that use each endpoint, not the math stages its
// clients are keyed by.
func TestClientStagesNameTheStylesStages(t *testing.T) {
	for _, tc := range []struct {
		style, stage string
		want         []string
	}{
		{schema.StyleSRaR, StageDistill, []string{StageDistill}},
		{schema.StyleSRaR, StageRollout, []string{StageRollout}},
		{schema.StyleFactualProcess, StageJudge, []string{StageJudge}},
		{schema.StyleGrounded, StageDistill, []string{StageAnalyze, StageSynthesize, StageEnrich}},
		{schema.StyleGrounded, StageRollout, []string{"answer"}},
		{schema.StyleGrounded, StageJudge, []string{StageJudge}},
		{schema.StyleGrounded, StageEmpirical, []string{StageEmpirical}},
	} {
		if got := clientStages(tc.style, tc.stage); !slices.Equal(got, tc.want) {
			t.Errorf("clientStages(%s, %s) = %v, want %v", tc.style, tc.stage, got, tc.want)
		}
	}
}
