package workers

import (
	"maps"
	"slices"
	"time"

	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/source"

	"github.com/rubricforge/rubricforge/llm"
)

// sumReports adds up the reports of the workers of one job into the
// report of their merge. Every worker reads every input row, so the input
// figures (rows, lines, bad lines) are one worker's, not their sum; the
// problem, rollout, validity, token and cost figures are summed.
func sumReports(ps []*mergePart, fingerprint, toolVersion string) pipeline.Report {
	now := time.Now().UTC()
	out := pipeline.Report{
		SpecVersion: ps[0].man.SpecVersion, ToolVersion: toolVersion, JobFingerprint: fingerprint,
		Started: now, Updated: now, FailuresByStage: map[string]int64{}, Validity: map[string]*pipeline.TypeValidity{},
		Repairs: map[string]int64{}, StageSeconds: map[string]float64{}, CostCounted: true,
		LLM: llm.Snapshot{Stages: map[string]llm.StageStats{}},
	}
	for _, p := range ps {
		r := p.report
		if r == nil {
			continue
		}
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		out.CostCounted = out.CostCounted && r.CostCounted
		out.ProblemsInFlight += r.ProblemsInFlight
		addProblems(&out.Problems, r.Problems)
		if len(r.BadLines) > len(out.BadLines) {
			out.BadLines = slices.Clone(r.BadLines)
		}
		addCounts(out.FailuresByStage, r.FailuresByStage)
		if len(r.LeftOutByStage) > 0 {
			if out.LeftOutByStage == nil {
				out.LeftOutByStage = map[string]int64{}
			}
			addCounts(out.LeftOutByStage, r.LeftOutByStage)
		}
		out.DuplicateDocumentsTotal += r.DuplicateDocumentsTotal
		out.DuplicateDocuments = append(out.DuplicateDocuments, r.DuplicateDocuments[:min(len(r.DuplicateDocuments), source.MaxDuplicateDocuments-len(out.DuplicateDocuments))]...)
		addCounts(out.Repairs, r.Repairs)
		addCounts(out.StageSeconds, r.StageSeconds)
		out.Sampled.Total += r.Sampled.Total
		out.Sampled.Correct += r.Sampled.Correct
		addRollouts(&out.Rollouts, r.Rollouts)
		for k, v := range r.Validity {
			addValidity(out.Validity, k, v)
		}
		addSnapshot(&out.LLM, r.LLM)
		addBatches(&out.Batches, r.Batches)
	}
	return out
}

// addBatches adds a worker's batches to the sum (nil while no worker sent
// any).
func addBatches(sum **llm.BatchSummary, b *llm.BatchSummary) {
	if b == nil {
		return
	}
	if *sum == nil {
		*sum = &llm.BatchSummary{}
	}
	s := *sum
	s.InProgress += b.InProgress
	s.Completed += b.Completed
	s.Expired += b.Expired
	s.Cancelled += b.Cancelled
	s.Offline += b.Offline
	s.Dropped += b.Dropped
	s.Lost += b.Lost
	s.RowsDone += b.RowsDone
	s.RowsTotal += b.RowsTotal
}

func addProblems(sum *pipeline.ProblemCounts, p pipeline.ProblemCounts) {
	sum.InputLines = max(sum.InputLines, p.InputLines)
	sum.InputRows = max(sum.InputRows, p.InputRows)
	sum.BadLines = max(sum.BadLines, p.BadLines)
	sum.Duplicates += p.Duplicates
	sum.Unique += p.Unique
	sum.Done += p.Done
	sum.Failed += p.Failed
	sum.LeftOut += p.LeftOut
	sum.Pending += p.Pending
}

func addCounts[V int64 | float64](sum, m map[string]V) {
	for k, v := range m {
		sum[k] += v
	}
}

func addRollouts(sum *pipeline.RolloutStats, r pipeline.RolloutStats) {
	sum.Total += r.Total
	sum.Correct += r.Correct
	sum.FormatOK += r.FormatOK
	sum.Truncated += r.Truncated
	for i := range sum.PassRate {
		sum.PassRate[i] += r.PassRate[i]
	}
	sum.SatisfactionJudged += r.SatisfactionJudged
	sum.SatisfactionMissing += r.SatisfactionMissing
	sum.RecordsMissingVerdicts += r.RecordsMissingVerdicts
}

func addValidity(sum map[string]*pipeline.TypeValidity, key string, v *pipeline.TypeValidity) {
	if v == nil {
		return
	}
	s := sum[key]
	if s == nil {
		s = &pipeline.TypeValidity{}
		sum[key] = s
	}
	s.Items += v.Items
	s.Valid += v.Valid
	s.Invalid += v.Invalid
	s.Unjudged += v.Unjudged
	s.EmpiricalValid += v.EmpiricalValid
	s.EmpiricalKnown += v.EmpiricalKnown
	if judged := s.Valid + s.Invalid; judged > 0 {
		s.Rate = float64(s.Valid) / float64(judged)
	}
}

func addSnapshot(sum *llm.Snapshot, s llm.Snapshot) {
	for name, st := range s.Stages {
		cur := sum.Stages[name]
		addStageStats(&cur, st)
		sum.Stages[name] = cur
	}
	addStageStats(&sum.Total, s.Total)
}

func addStageStats(sum *llm.StageStats, s llm.StageStats) {
	sum.Requests += s.Requests
	sum.CacheHits += s.CacheHits
	sum.Retries += s.Retries
	sum.Failures += s.Failures
	sum.Repairs += s.Repairs
	sum.BatchAnswers += s.BatchAnswers
	sum.PromptTokens += s.PromptTokens
	sum.CompletionTokens += s.CompletionTokens
	sum.CostUSD += s.CostUSD
	sum.LargestCompletion = max(sum.LargestCompletion, s.LargestCompletion)
	sum.LostReplies += s.LostReplies
	sum.LostTokens += s.LostTokens
	sum.LostCostUSD += s.LostCostUSD
	sum.Models = addMap(sum.Models, s.Models)
	sum.ErrorsByReason = addMap(sum.ErrorsByReason, s.ErrorsByReason)
	sum.FinishReasons = addMap(sum.FinishReasons, s.FinishReasons)
}

func addMap(sum, m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return sum
	}
	if sum == nil {
		return maps.Clone(m)
	}
	addCounts(sum, m)
	return sum
}
