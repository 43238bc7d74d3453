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
	done3 := pipeline.ProblemCounts{Unique: 3, Done: 3}
	for _, tc := range []struct {
		name string
		rep  pipeline.Report
		want int
	}{
		{"clean", pipeline.Report{Status: pipeline.StatusFinished, Problems: done3, CorpusRows: 3}, exitOK},
		{"a failed problem", pipeline.Report{Status: pipeline.StatusFinished, Problems: pipeline.ProblemCounts{Unique: 4, Done: 3, Failed: 1}, CorpusRows: 3}, exitProblems},
		{"an empty corpus", pipeline.Report{Status: pipeline.StatusFinished}, exitProblems},
		{"a stage that judged nothing", pipeline.Report{Status: pipeline.StatusFinished, Problems: done3, CorpusRows: 3,
			StageFailures: []pipeline.StageFailure{{Stage: job.StageEmpirical, Reason: "judged none of its 24 closed-book answers"}}}, exitProblems},
	} {
		if got := exitCode(&tc.rep, nil, io.Discard); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
