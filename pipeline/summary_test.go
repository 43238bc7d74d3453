package pipeline

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/llm"
)

// summaryReport is a finished run's report with every figure set.
func summaryReport() Report {
	return Report{
		Status: StatusFinished,
		Problems: ProblemCounts{InputLines: 65, InputRows: 64, BadLines: 1, Duplicates: 1, Unique: 63, Done: 40, Failed: 2, LeftOut: 21,
			DoneThisSession: 40, FailedThisSession: 2, LeftOutThisSession: 21},
		FailuresByStage: map[string]int64{job.StageDistill: 1, job.StageJudge: 1},
		Sampled:         Tally{Total: 504, Correct: 278},
		CorpusRows:      40,
		Rollouts:        RolloutStats{Total: 320, Correct: 160, FormatOK: 300, Truncated: 3, SatisfactionJudged: 312, SatisfactionMissing: 8, RecordsMissingVerdicts: 5},
		Validity: map[string]*TypeValidity{
			"overall": {Items: 400, Valid: 390, Invalid: 10, EmpiricalValid: 200, EmpiricalKnown: 380},
			"PITFALL": {Items: 100, Valid: 95, Invalid: 5, EmpiricalValid: 40, EmpiricalKnown: 95},
		},
		LLM:            llm.Snapshot{Total: llm.StageStats{Requests: 1200, CacheHits: 30, Retries: 12, PromptTokens: 900000, CompletionTokens: 400000, CostUSD: 0.25}},
		CostCounted:    true,
		Shards:         2,
		ElapsedSeconds: 12.5,
	}
}

// TestSummaryGolden: the summary says what its counts mean, and leaves out
// what was not measured (run with -update to rewrite testdata); a golden
// summary's figures agree with each other.
func TestSummaryGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		modify func(r *Report)
	}{
		{"finished", func(r *Report) {}},
		{"judge_off_no_prices", func(r *Report) {
			r.Validity = map[string]*TypeValidity{"overall": {Items: 400, Unjudged: 400}, "PITFALL": {Items: 100, Unjudged: 100}}
			r.Rollouts.SatisfactionJudged, r.Rollouts.SatisfactionMissing, r.Rollouts.RecordsMissingVerdicts = 0, 0, 0
			r.CostCounted = false
			r.LLM.Total.CostUSD = 0
		}},
		{"budget_stop", func(r *Report) {
			r.Status, r.StoppedBy = StatusStopped, StopBudget
			r.StopReason = "budget reached: spent $0.2500 and 1300000 tokens over every session of this run (max_cost_usd 0.25, max_tokens 0)"
			r.Problems.Done, r.Problems.DoneThisSession, r.Problems.Pending = 20, 20, 20
			r.CorpusRows = 20
			r.Rollouts = RolloutStats{Total: 160, Correct: 80, FormatOK: 150, Truncated: 1, SatisfactionJudged: 156, SatisfactionMissing: 4, RecordsMissingVerdicts: 3}
			r.Validity = map[string]*TypeValidity{
				"overall": {Items: 200, Valid: 195, Invalid: 5, EmpiricalValid: 100, EmpiricalKnown: 190},
				"PITFALL": {Items: 50, Valid: 48, Invalid: 2, EmpiricalValid: 20, EmpiricalKnown: 48},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := summaryReport()
			tc.modify(&r)
			var b bytes.Buffer
			r.WriteSummary(&b, "runs/demo")
			golden.CheckAgreeing(t, filepath.Join("testdata", "summary_"+tc.name+".golden"), b.Bytes(), summaryDisagreements)
		})
	}
}
