package main

import (
	"io"
	"testing"

	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestExitCodeOfAFailedStage: a finished run whose empirical stage judged
// nothing exits 3, as one with failed problems does.
func TestExitCodeOfAFailedStage(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  pipeline.Report
		want int
	}{
		{"clean", pipeline.Report{Status: pipeline.StatusFinished}, exitOK},
		{"a failed problem", pipeline.Report{Status: pipeline.StatusFinished, Problems: pipeline.ProblemCounts{Failed: 1}}, exitProblems},
		{"a stage that judged nothing", pipeline.Report{Status: pipeline.StatusFinished,
			StageFailures: []pipeline.StageFailure{{Stage: job.StageEmpirical, Reason: "judged none of its 24 closed-book answers"}}}, exitProblems},
	} {
		if got := exitCode(&tc.rep, nil, io.Discard); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
