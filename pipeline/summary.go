package pipeline

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/schema"
)

// WriteSummary prints the report's figures for a person.
func (r *Report) WriteSummary(w io.Writer, dir string) {
	p := r.Problems
	fmt.Fprintf(w, "run directory: %s (%s", dir, r.Status)
	if r.StopReason != "" {
		fmt.Fprintf(w, ": %s", r.StopReason)
	}
	fmt.Fprintln(w, ")")
	style := r.Style
	if r.Grounded != nil {
		style = schema.StyleGrounded
	}
	words := job.UnitWordsOf(style)
	units, leftOutBy := words.Units, words.LeftOutBy
	switch {
	case r.Status != StatusRunning:
		fmt.Fprintf(w, "%s: %d unique of %d input rows (%d duplicates, %d bad lines)\n", units, p.Unique, p.InputRows, p.Duplicates, p.BadLines)
	case p.InputLines > 0:
		fmt.Fprintf(w, "%s: %d of %d input rows read so far: %d unique (%d duplicates, %d bad lines)\n", units, p.InputRows, p.InputLines, p.Unique, p.Duplicates, p.BadLines)
	default:
		fmt.Fprintf(w, "%s: %d input rows read so far (the total is still being counted): %d unique (%d duplicates, %d bad lines)\n", units, p.InputRows, p.Unique, p.Duplicates, p.BadLines)
	}
	r.Partition.writeShare(w)
	r.writeDuplicateDocuments(w)
	fmt.Fprintf(w, "  done %d (%d this session), failed %d, left out by %s %d, pending %d\n", p.Done, p.DoneThisSession, p.Failed, leftOutBy, p.LeftOut, p.Pending)
	if r.LeftOutByStage[job.StagePassage] > 0 { // not only the checks the line above names
		fmt.Fprint(w, "  left out by stage:")
		for _, k := range sortedKeys(r.LeftOutByStage) {
			fmt.Fprintf(w, " %s=%d", k, r.LeftOutByStage[k])
		}
		fmt.Fprintf(w, " (passage: shorter than grounded.min_passage_chars; the reasons are in failures.jsonl)\n")
	}
	if len(r.FailuresByStage) > 0 {
		fmt.Fprint(w, "  failures by stage:")
		for _, k := range sortedKeys(r.FailuresByStage) {
			fmt.Fprintf(w, " %s=%d", k, r.FailuresByStage[k])
		}
		fmt.Fprintln(w)
		for _, k := range sortedKeys(r.FailuresByStage) {
			if c, ok := r.FailureCauses[k]; ok {
				fmt.Fprintf(w, "    %s, most common cause (%d of %d): %s%s\n", k, c.Count, c.Of, c.Reason, jsonObjectHint(k, c.Reason))
			}
		}
	}
	for _, f := range r.StageFailures {
		fmt.Fprintf(w, "  stage failed: %s %s\n", f.Stage, f.Reason)
	}
	r.writeRollouts(w)
	r.writeGrounded(w)
	r.writeValidity(w, words.Items)
	t := r.LLM.Total
	cost := fmt.Sprintf("cost $%.4f", t.CostUSD)
	if !r.CostCounted {
		cost = "cost not counted (the job has no prices)"
	}
	if t.LostReplies > 0 && r.CostCounted {
		cost += fmt.Sprintf(" (with $%.4f for %d replies lost after the provider may have generated them, estimated)", t.LostCostUSD, t.LostReplies)
	}
	fmt.Fprintf(w, "requests: %d sent, %d from cache, %d retries; tokens %d prompt + %d completion; %s\n",
		t.Requests, t.CacheHits, t.Retries, t.PromptTokens, t.CompletionTokens, cost)
	r.writeBatches(w)
	elapsed := (time.Duration(r.ElapsedSeconds * float64(time.Second))).Round(time.Millisecond)
	switch {
	case r.Status == StatusRunning:
		fmt.Fprintf(w, "shards: %d; running for %s at its last update\n", r.Shards, elapsed.Round(time.Second))
	case r.StoppedBy == StopDied:
		fmt.Fprintf(w, "shards: %d; the session ran for at least %s (its last update, %s)\n", r.Shards, elapsed.Round(time.Second), r.Updated.Local().Format(time.DateTime))
	default:
		fmt.Fprintf(w, "shards: %d; this session took %s\n", r.Shards, elapsed)
	}
}

// writeDuplicateDocuments names the documents left out as copies of
// earlier ones, with the one kept.
func (r *Report) writeDuplicateDocuments(w io.Writer) {
	if r.DuplicateDocumentsTotal == 0 {
		return
	}
	fmt.Fprintf(w, "  duplicate documents: %d left out, the first in input order kept:", r.DuplicateDocumentsTotal)
	for i, d := range r.DuplicateDocuments {
		if i == 3 {
			fmt.Fprint(w, " ... (report.json names more)")
			break
		}
		fmt.Fprintf(w, " %s (copy of %s)", d.Dropped.DocID, d.Kept.DocID)
	}
	fmt.Fprintln(w)
}

// writeRollouts prints the accuracy over every sampled rollout, then the
// figures of the rollouts kept in the corpus.
func (r *Report) writeRollouts(w io.Writer) {
	s, k := r.Sampled, r.Rollouts
	if s.Total == 0 && k.Total == 0 {
		return
	}
	fmt.Fprintf(w, "rollouts: %d sampled, %.1f%% correct", s.Total, pct(s.Correct, s.Total))
	if k.Total > 0 {
		fmt.Fprintf(w, "; in the %d kept problems: %d, %.1f%% correct, %.1f%% well formatted, %d cut off",
			r.CorpusRows, k.Total, pct(k.Correct, k.Total), pct(k.FormatOK, k.Total), k.Truncated)
	}
	fmt.Fprintln(w)
}

// writeValidity prints the judge's and the empirical validity figures by
// item type, leaving out what was not measured.
func (r *Report) writeValidity(w io.Writer, items string) {
	overall := r.Validity["overall"]
	if overall == nil || overall.Items == 0 {
		return
	}
	var judged, measured []string
	for _, k := range sortedKeys(r.Validity) {
		v := r.Validity[k]
		if n := v.Valid + v.Invalid; n > 0 {
			judged = append(judged, fmt.Sprintf("%s %d/%d (%.1f%%)", k, v.Valid, n, pct(v.Valid, n)))
		}
		if v.EmpiricalKnown > 0 {
			measured = append(measured, fmt.Sprintf("%s %d/%d (%.1f%%)", k, v.EmpiricalValid, v.EmpiricalKnown, pct(v.EmpiricalValid, v.EmpiricalKnown)))
		}
	}
	if len(judged) == 0 {
		fmt.Fprintf(w, "%s: %d (not judged)\n", items, overall.Items)
	} else {
		fmt.Fprintf(w, "%s valid/judged: %s\n", items, strings.Join(judged, ", "))
	}
	if len(measured) > 0 {
		fmt.Fprintf(w, "empirically valid/measured: %s\n", strings.Join(measured, ", "))
	}
	if k := r.Rollouts; k.SatisfactionMissing > 0 {
		fmt.Fprintf(w, "  %d of %d rollouts have no usable satisfaction verdict (in %d records); their items are measured over the other rollouts\n",
			k.SatisfactionMissing, k.SatisfactionMissing+k.SatisfactionJudged, k.RecordsMissingVerdicts)
	}
}

// writeGrounded prints the grounded records' questions and criteria, and
// the criteria whose scores do not vary across closed-book answers.
func (r *Report) writeGrounded(w io.Writer) {
	g := r.Grounded
	if g == nil {
		return
	}
	fmt.Fprintf(w, "grounded: %d passages, %d questions, %d criteria\n", g.Passages, g.Questions, g.Criteria)
	var stages []string
	for _, st := range []string{job.StageAnalyze, job.StageSynthesize, job.StageEnrich, job.StageJudge, job.StageEmpirical} {
		if ss, ok := r.LLM.Stages[st]; ok {
			stages = append(stages, fmt.Sprintf("%s %d (%d repaired)", st, ss.Requests, ss.Repairs))
		}
	}
	if len(stages) > 0 {
		fmt.Fprintf(w, "  requests by stage: %s\n", strings.Join(stages, ", "))
	}
	switch {
	case g.Measured > 0:
		fmt.Fprintf(w, "  closed-book answers: %d scored, %d unscored; criteria measured %d, not varying %d (%.1f%%: no training signal), unmeasured %d\n",
			g.ScoredAnswers, g.UnscoredAnswers, g.Measured, g.NotVarying, pct(g.NotVarying, g.Measured), g.Criteria-g.Measured)
	case g.UnscoredAnswers > 0:
		fmt.Fprintf(w, "  closed-book answers: %d scored, %d unscored; every one of the %d criteria is unmeasured\n",
			g.ScoredAnswers, g.UnscoredAnswers, g.Criteria)
	}
	if g.OpenBookScored+g.OpenBookUnscored > 0 {
		fmt.Fprintf(w, "  open-book answers: %d scored, %d unscored (validate reports each criterion's open/closed-book edge)\n", g.OpenBookScored, g.OpenBookUnscored)
	}
}

func pct(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return 100 * float64(n) / float64(d)
}

// jsonObjectHint tells how to stop sending response_format when a stage's
// failures are the endpoint refusing it.
func jsonObjectHint(stage, reason string) string {
	switch stage {
	case job.StageAnalyze, job.StageSynthesize, job.StageJudge:
		if strings.Contains(reason, "response_format") || strings.Contains(reason, "json_object") {
			return fmt.Sprintf(" (if the endpoint does not take response_format, set json_object.%s: false in the job file)", stage)
		}
	}
	return ""
}
