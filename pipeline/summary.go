package pipeline

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/schema"
)

// WriteSummary prints the report's figures for a person, as the run that
// made it ends ("this session").
func (r *Report) WriteSummary(w io.Writer, dir string) { r.writeSummary(w, dir, "this session") }

// writeSummary is WriteSummary naming the session the report's session
// figures are of: "this session" for the run itself, "the last session"
// for distill status.
func (r *Report) writeSummary(w io.Writer, dir, session string) {
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
	bad := "bad lines"
	if style == schema.StyleGrounded {
		bad = "unusable documents" // files or rows without usable text
	}
	switch {
	case r.Status != StatusRunning:
		fmt.Fprintf(w, "%s: %d unique of %d input rows (%d duplicates, %d %s)\n", units, p.Unique, p.InputRows, p.Duplicates, p.BadLines, bad)
	case p.InputLines > 0:
		fmt.Fprintf(w, "%s: %d of %d input rows read so far: %d unique (%d duplicates, %d %s)\n", units, p.InputRows, p.InputLines, p.Unique, p.Duplicates, p.BadLines, bad)
	default:
		fmt.Fprintf(w, "%s: %d input rows read so far (the total is still being counted): %d unique (%d duplicates, %d %s)\n", units, p.InputRows, p.Unique, p.Duplicates, p.BadLines, bad)
	}
	r.Partition.writeShare(w)
	if r.SkippedFiles != nil {
		fmt.Fprintf(w, "  skipped %s\n", r.SkippedFiles)
	}
	r.writeDuplicateDocuments(w)
	in := "in " + session
	if session == "this session" {
		in = session
	}
	fmt.Fprintf(w, "  done %d (%d %s), failed %d, left out by %s %d, pending %d\n", p.Done, p.DoneThisSession, in, p.Failed, leftOutBy, p.LeftOut, p.Pending)
	if r.LeftOutByStage[job.StagePassage] > 0 { // not only the checks the line above names
		fmt.Fprintf(w, "  left out by stage: %s (%s; passage: too short, or no text; the reasons are in failures.jsonl)\n", r.leftOutByStage(), r.leftOutShare(units))
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
	cached := ""
	if t.CachedPromptTokens > 0 {
		cached = fmt.Sprintf(" (%d cached)", t.CachedPromptTokens)
	}
	fmt.Fprintf(w, "requests: %d sent, %d from cache, %d retries; tokens %d prompt%s + %d completion; %s\n",
		t.Requests, t.CacheHits, t.Retries, t.PromptTokens, cached, t.CompletionTokens, cost)
	r.writeBatches(w)
	elapsed := (time.Duration(r.ElapsedSeconds * float64(time.Second))).Round(time.Millisecond)
	switch {
	case r.Status == StatusRunning:
		fmt.Fprintf(w, "shards: %d; running for %s at its last update\n", r.Shards, elapsed.Round(time.Second))
	case r.StoppedBy == StopDied:
		fmt.Fprintf(w, "shards: %d; the session ran for at least %s (its last update, %s)\n", r.Shards, elapsed.Round(time.Second), r.Updated.Local().Format(time.DateTime))
	default:
		fmt.Fprintf(w, "shards: %d; %s took %s\n", r.Shards, session, elapsed)
	}
	if why := r.EmptyReason(); why != "" {
		fmt.Fprintln(w, why)
	}
}

// leftOutByStage is "passage=1 quality=18".
func (r *Report) leftOutByStage() string {
	var parts []string
	for _, k := range sortedKeys(r.LeftOutByStage) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, r.LeftOutByStage[k]))
	}
	return strings.Join(parts, " ")
}

// leftOutShare is the share of the unique units left out: "33.3% of 3
// passages".
func (r *Report) leftOutShare(units string) string {
	return fmt.Sprintf("%.1f%% of %d %s", pct(r.Problems.LeftOut, r.Problems.Unique), r.Problems.Unique, units)
}

// logLosses logs, at the end of a session, what of the input the corpus
// does not hold and why: files that are no documents, duplicates, bad
// rows, units left out and failed.
func (l *loop) logLosses() {
	r := &l.report
	p := r.Problems
	if p.LeftOut+p.Failed+p.Duplicates+p.BadLines == 0 && r.SkippedFiles == nil {
		return
	}
	units := job.UnitWordsOf(l.job.Style).Units
	attrs := []any{"unique", p.Unique, "done", p.Done, "left_out", p.LeftOut, "left_out_share", r.leftOutShare(units), "failed", p.Failed,
		"duplicates", p.Duplicates, "bad_lines", p.BadLines}
	if len(r.LeftOutByStage) > 0 {
		attrs = append(attrs, "left_out_by_stage", r.leftOutByStage())
	}
	if r.DuplicateDocumentsTotal > 0 {
		attrs = append(attrs, "duplicate_documents", r.DuplicateDocumentsTotal)
	}
	if r.SkippedFiles != nil {
		attrs = append(attrs, "skipped_files", r.SkippedFiles.String())
	}
	bad := "bad lines"
	if l.job.Style == schema.StyleGrounded {
		bad = "unusable documents"
	}
	l.log.Info(fmt.Sprintf("what the corpus does not hold: %d of %d %s left out, %d failed, %d duplicates, %d %s (the reasons are in failures.jsonl)",
		p.LeftOut, p.Unique, units, p.Failed, p.Duplicates, p.BadLines, bad), attrs...)
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
		if refusesResponseFormat(reason) {
			return " (" + jsonObjectAdvice + ")"
		}
	}
	return ""
}

// jsonObjectAdvice says what to set when the endpoint refuses
// response_format: every stage that sends it, since one refused stage
// stops a passage before the others are asked.
const jsonObjectAdvice = "the endpoint refuses response_format; set json_object: {analyze: false, synthesize: false, judge: false} in the job file, and the replies are parsed and repaired the same"

// refusesResponseFormat: a failure reason that is the endpoint refusing
// response_format: its own words (vLLM, OpenAI), or llama.cpp's "Failed to
// initialize samplers" (it cannot build the JSON grammar).
func refusesResponseFormat(reason string) bool {
	return strings.Contains(reason, "response_format") || strings.Contains(reason, "json_object") ||
		strings.Contains(reason, "Failed to initialize samplers")
}
