package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/internal/errwriter"
)

// WriteText writes the report for a person: aligned tables no wider than
// Width columns.
func (r *Report) WriteText(w io.Writer) error {
	ew := errwriter.New(w) // keeps the first write error, so sections need not check each
	sections := []func(io.Writer){
		r.textCorpus, r.textProblems, r.textStructure, r.textValidity, r.textCounts, r.textCoOccurrence,
		r.textPassRates, r.textRollouts, r.textUsage, r.textProvenance, r.textLiveStats, r.textEmpirical, r.textDiscrimination, r.textReliability, r.textJudgePanel, r.textGrounded, r.textUnavailable, r.textReview,
	}
	if r.Corpus.RubricKind == RubricGrounded { // its own sections lead
		sections = []func(io.Writer){r.textCorpus, r.textProblems, r.textStructure, r.textGrounded, r.textJudgePanel, r.textUsage, r.textProvenance, r.textUnavailable, r.textReview}
	}
	for _, section := range sections {
		section(ew)
	}
	return ew.Err()
}

func heading(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, clip(fmt.Sprintf(format, args...)))
}

func (r *Report) textCorpus(w io.Writer) {
	c := &r.Corpus
	kind := map[string]string{KindRun: "run directory", KindExport: deref(c.ExportFormat) + " export", KindFiles: "files"}[c.Kind]
	fmt.Fprintln(w, clip(fmt.Sprintf("corpus: %s (%s)", strings.Join(c.Paths, " "), kind)))
	contents := fmt.Sprintf("%s records, %s rubric items", num(c.Records), num(c.Items))
	if g := r.Grounded; g != nil && c.RubricKind == RubricGrounded {
		contents = fmt.Sprintf("%s records (%s), %s questions, %s criteria", num(c.Records), groundedRowsAre(c.Format), num(g.Questions), num(g.Criteria))
	}
	fmt.Fprintln(w, clip(fmt.Sprintf("  %s, %d of %d files read; spec %s", contents, c.FilesRead, c.Files, countList(c.SpecVersions))))
	fmt.Fprintln(w, clip("  styles: "+countList(c.Styles)+"; splits: "+countList(c.Splits)))
	fps := countList(c.JobFingerprints)
	if len(c.ExportFingerprints) > 0 {
		fps = strings.Join(c.ExportFingerprints, ", ") + " (from export.json)"
	}
	fmt.Fprintln(w, clip("  job fingerprints: "+fps))
	if fp := deref(c.ManifestFingerprint); fp != "" {
		fmt.Fprintln(w, clip("  the manifest's current job: "+fp))
	}
	if c.ValidOnly != nil && *c.ValidOnly {
		fmt.Fprintln(w, "  exported with --valid-only: items judged invalid were dropped before export")
	}
	r.textRunInput(w)
	if g := r.Grounded; g != nil && g.Measured > 0 {
		wrapIndented(w, "  ", fmt.Sprintf("criteria with no training signal: %s of %s measured (%s): every closed-book answer scored them alike",
			num(g.Constant), num(g.Measured), pctText(g.NoSignalShare)))
	}
}

// textRunInput says what of a run's input its corpus does not hold.
func (r *Report) textRunInput(w io.Writer) {
	in := r.RunInput
	if in == nil {
		return
	}
	stages := ""
	if len(in.LeftOutByStage) > 0 {
		var parts []string
		for _, c := range in.LeftOutByStage {
			parts = append(parts, fmt.Sprintf("%s=%d", c.Stage, c.Units))
		}
		stages = ": " + strings.Join(parts, " ")
	}
	bad := "bad line"
	if in.Units == "passages" {
		bad = "unusable document"
	}
	wrapIndented(w, "  ", fmt.Sprintf("input: %s unique %s of %s rows (%s, %s)",
		num(in.Unique), in.Units, num(in.InputRows), plural(in.Duplicates, "duplicate"), plural(in.BadLines, bad)))
	wrapIndented(w, "    ", fmt.Sprintf("%s in the corpus, %s left out (%s%s), %s failed, %s pending",
		num(in.Done), num(in.LeftOut), pctText(in.LeftOutShare), stages, num(in.Failed), num(in.Pending)))
	var more []string
	if in.SkippedFiles != nil && in.SkippedFiles.Files > 0 {
		more = append(more, "skipped "+in.SkippedFiles.String())
	}
	if in.DuplicateDocuments > 0 {
		more = append(more, plural(in.DuplicateDocuments, "duplicate document"))
	}
	if len(more) > 0 {
		wrapIndented(w, "    ", strings.Join(more, "; "))
	}
}

// wrapIndented writes s at indent, wrapped at the report's width, its
// later lines indented two more: a line that says what was lost is said
// in full, never cut.
func wrapIndented(w io.Writer, indent, s string) {
	for i, l := range wrap(s, Width-len(indent)-2) {
		if i > 0 {
			l = "  " + l
		}
		fmt.Fprintln(w, indent+l)
	}
}

// plural is "1 duplicate", "2 duplicates".
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return num(n) + " " + word + "s"
}

// pctText is a share as "50.0%", "-" when it is null.
func pctText(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**p)
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// countList formats counts as "a (3), b (1)"; "-" when empty.
func countList(cs []Count) string {
	if len(cs) == 0 {
		return "-"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		v := c.Value
		if v == "" {
			v = `""`
		}
		parts[i] = fmt.Sprintf("%s (%s)", v, num(c.Records))
	}
	return strings.Join(parts, ", ")
}

func (r *Report) textProblems(w io.Writer) {
	if len(r.InputProblems) == 0 {
		return
	}
	heading(w, "Input problems: %d (the rest of the corpus is audited)", len(r.InputProblems))
	t := newTable("file", "line", "problem").leftAlign(2)
	for _, p := range r.InputProblems {
		line := ""
		if p.Line > 0 {
			line = strconv.FormatInt(p.Line, 10)
		}
		t.add(p.File, line, p.Error)
	}
	t.write(w)
}

func (r *Report) textStructure(w io.Writer) {
	s := &r.Structure
	limit := fmt.Sprintf(" (SRaR item limit %d)", s.MaxItems)
	if r.Corpus.RubricKind == RubricGrounded {
		limit = ""
	}
	heading(w, "Structure: %s violations in %s of %s records%s",
		num(s.Violations), num(s.RecordsWithViolations), num(s.RecordsChecked), limit)
	if s.Violations == 0 {
		return
	}
	t := newTable("rule", "violations", "records")
	for _, rc := range s.ByRule {
		t.add(rc.Rule, num(rc.Violations), num(rc.Records))
	}
	t.write(w)
	fmt.Fprintln(w)
	if int64(len(s.Listed)) < s.Violations {
		fmt.Fprintf(w, "  the first %d, in corpus order:\n", len(s.Listed))
	}
	t = newTable("record", "item", "rule", "detail").leftAlign(2, 3)
	for _, v := range s.Listed {
		item := "-"
		if v.ItemID != nil {
			item = strconv.Itoa(int(*v.ItemID))
		}
		t.add(v.RecordID, item, v.Rule, v.Detail)
	}
	t.write(w)
}

func (r *Report) textValidity(w io.Writer) {
	if r.Validity == nil {
		return
	}
	heading(w, "Validity by type (the LLM judge's verdicts; rate = valid / judged)")
	t := newTable("type", "total", "valid", "invalid", "unjudged", "rate")
	for _, v := range append(slices.Clone(r.Validity.ByType), r.Validity.Overall) {
		t.add(v.Type, num(v.Total), num(v.Valid), num(v.Invalid), num(v.Unjudged), pct(v.Rate))
	}
	t.write(w)
}

func (r *Report) textCounts(w io.Writer) {
	for _, sc := range r.Counts {
		heading(w, "Items per record by type: %s, %s records", orQuoted(sc.Style), num(sc.Records))
		t := newTable("type", "mean", "std", "median", "min", "max", "share")
		for _, tc := range append(slices.Clone(sc.ByType), sc.Total) {
			t.add(tc.Type, f2(tc.Mean), f2(tc.Std), formatFloat(tc.Median), strconv.Itoa(tc.Min), strconv.Itoa(tc.Max), pct(tc.Share))
		}
		t.write(w)
		weights := make([]string, 0, len(sc.Weights))
		for _, wt := range sc.Weights {
			weights = append(weights, fmt.Sprintf("%s (%s)", formatFloat(wt.Weight), num(wt.Items)))
		}
		fmt.Fprintln(w, clip(fmt.Sprintf("  mean words per item %s; item weights: %s", fix(sc.WordsPerItem, 1), strings.Join(weights, ", "))))
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  items per record (%s):\n", orQuoted(sc.Style))
		var most int64
		for _, b := range sc.ItemsPerRecord {
			most = max(most, b.Records)
		}
		t = newTable("items", "records", "share", "").leftAlign(3)
		t.left[0] = false
		for _, b := range sc.ItemsPerRecord {
			t.add(strconv.Itoa(b.Value), num(b.Records), pctOf(b.Records, sc.Records), bar(b.Records, most, 40))
		}
		t.write(w)
	}
}

func orQuoted(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func (r *Report) textCoOccurrence(w io.Writer) {
	c := r.PitfallBonus
	if c == nil {
		return
	}
	heading(w, "PITFALL x BONUS co-occurrence (srar records)")
	head := []string{""}
	for _, b := range c.Bonus {
		head = append(head, fmt.Sprintf("BONUS=%d", b))
	}
	t := newTable(append(head, "Total")...)
	for i, p := range c.Pitfall {
		cells := []string{fmt.Sprintf("PITFALL=%d", p)}
		for _, n := range c.Matrix[i] {
			cells = append(cells, num(n))
		}
		t.add(append(cells, num(c.PitfallTotals[i]))...)
	}
	cells := []string{"Total"}
	for _, n := range c.BonusTotals {
		cells = append(cells, num(n))
	}
	t.add(append(cells, num(c.Records))...)
	t.write(w)
}

func (r *Report) textPassRates(w io.Writer) {
	p := r.PassRates
	if p == nil {
		return
	}
	heading(w, "Pass rates: %s records with rollouts (%s without); mean %s, median %s", num(p.Records), num(p.WithoutRollouts), fix(p.Mean, 3), fix(p.Median, 3))
	if p.RolloutsPerRecord == nil {
		return
	}
	rp := p.RolloutsPerRecord
	fmt.Fprintf(w, "  rollouts per record: mean %.2f, min %d, max %d; all wrong %s, all correct %s\n", rp.Mean, rp.Min, rp.Max, num(p.AllWrong), num(p.AllCorrect))
	writeRanges(w, "pass rate", p.Histogram, p.Records, 2)
}

// writeRanges prints a histogram of real values with bars.
func writeRanges(w io.Writer, what string, bins []Range, total int64, decimals int) {
	var most int64
	for _, b := range bins {
		most = max(most, b.Count)
	}
	t := newTable(what, "count", "share", "").leftAlign(3)
	for i, b := range bins {
		closing := ")"
		if i == len(bins)-1 {
			closing = "]"
		}
		label := fmt.Sprintf("[%s, %s%s", strconv.FormatFloat(b.Lo, 'f', decimals, 64), strconv.FormatFloat(b.Hi, 'f', decimals, 64), closing)
		t.add(label, num(b.Count), pctOf(b.Count, total), bar(b.Count, most, 40))
	}
	t.write(w)
}

func (r *Report) textRollouts(w io.Writer) {
	ro := r.Rollouts
	if ro == nil || ro.Total == 0 {
		return
	}
	heading(w, "Rollouts: %s; %s correct, %s well formatted, %s cut off by the token limit",
		num(ro.Total), pctOf(ro.Correct, ro.Total), pctOf(ro.FormatOK, ro.Total), num(ro.CutOff))
	t := ro.Tokens
	if t == nil || t.Known == 0 {
		fmt.Fprintln(w, "  completion tokens: not known (the endpoint reported usage per request, not per sample)")
		return
	}
	fmt.Fprintf(w, "  completion tokens: mean %s, median %s, p90 %d, p99 %d, max %d; %s unknown\n",
		fix(t.Mean, 0), formatFloat(*t.Median), *t.P90, *t.P99, *t.Max, num(t.Unknown))
	fmt.Fprintf(w, "  mean of correct rollouts %s, of incorrect ones %s\n", fix(t.MeanCorrect, 0), fix(t.MeanIncorrect, 0))
	writeRanges(w, "tokens", t.Histogram, t.Known, 0)
}

func (r *Report) textUsage(w io.Writer) {
	u := r.Usage
	if u == nil {
		return
	}
	units := "problems"
	if r.Corpus.RubricKind == RubricGrounded {
		units = "passages"
	}
	heading(w, "Tokens and cost of the records (failed and left-out %s' spend is in the run's report.json)", units)
	fmt.Fprintf(w, "  %s requests sent (%s answers read from the cache), %s prompt + %s completion tokens\n",
		num(u.Requests), num(u.CachedRequests), num(u.PromptTokens), num(u.CompletionTokens))
	if u.RunRequests != nil {
		fmt.Fprintf(w, "  the run: %s requests sent in all (%s answers read from the cache), failed and left-out ones included\n",
			num(*u.RunRequests), num(*u.RunCacheReads))
	}
	if u.Records > 0 {
		fmt.Fprintf(w, "  cost $%.4f: $%.6f and %s tokens per record\n", u.CostUSD, *u.CostPerRecordUSD, num(int64(*u.TokensPerRecord+0.5)))
	}
}

func (r *Report) textProvenance(w io.Writer) {
	p := r.Provenance
	if p == nil {
		return
	}
	heading(w, "Provenance (records per value)")
	for _, l := range []struct {
		name string
		cs   []Count
	}{
		{"rollout models", p.RolloutModels}, {"distill models", p.DistillModels}, {"judge models", p.JudgeModels},
		{"empirical models", p.EmpiricalModels}, {"alpha", p.Alphas}, {"tool versions", p.ToolVersions},
	} {
		fmt.Fprintln(w, clip(fmt.Sprintf("  %-17s %s", l.name+":", countList(l.cs))))
	}
	if p.CreatedFirst != nil {
		fmt.Fprintf(w, "  %-17s %s .. %s\n", "created:", p.CreatedFirst.UTC().Format(time.RFC3339), p.CreatedLast.UTC().Format(time.RFC3339))
	}
}

func (r *Report) textEmpirical(w io.Writer) {
	e := r.Empirical
	if e == nil {
		return
	}
	heading(w, "Empirical validity (RLCER: discriminating = satisfaction varies, correlated = corr > alpha)")
	t := newTable("type", "items", "measured", "discriminating", "correlated", "valid", "undecided")
	for _, te := range append(slices.Clone(e.ByType), e.Overall) {
		t.add(te.Type, num(te.Items), num(te.Measured), num(te.Discriminating)+" "+pct(te.DiscriminatingShare),
			num(te.Correlated)+" "+pct(te.CorrelatedShare), num(te.Valid)+" "+pct(te.ValidShare), num(te.Undecided))
	}
	t.write(w)
	fmt.Fprintf(w, "  %s records recomputed from their rollouts' verdicts (differences are violations)\n", num(e.RecordsRecomputed))
	if len(e.SatisfactionByCorrectness) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "  satisfied by correct vs incorrect rollouts (PITFALL: triggered):")
		t = newTable("type", "pairs", "correct", "incorrect", "diff (pp)", "r_pb")
		for _, s := range e.SatisfactionByCorrectness {
			t.add(s.Type, num(s.Pairs), pct(s.Correct), pct(s.Incorrect), fix(s.DiffPP, 1), fix(s.PointBiserial, 2))
		}
		t.write(w)
	}
	if a := e.JudgeVsEmpirical; a != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  LLM judge vs RLCER rule: %s agreement, kappa %s (%s) on %s items\n", pct(a.Rate), fix(a.Kappa, 2), a.Scale, num(a.Items))
	}
}

func (r *Report) textUnavailable(w io.Writer) {
	if len(r.Unavailable) == 0 {
		return
	}
	heading(w, "Not available from this input")
	var reasons []string
	sections := map[string][]string{}
	for _, u := range r.Unavailable {
		if _, ok := sections[u.Reason]; !ok {
			reasons = append(reasons, u.Reason)
		}
		sections[u.Reason] = append(sections[u.Reason], u.Section)
	}
	for _, why := range reasons {
		fmt.Fprintln(w, clip("  "+strings.Join(sections[why], ", ")))
		for _, l := range wrap(why, Width-4) {
			fmt.Fprintln(w, "    "+l)
		}
	}
}

// wrap breaks s into lines of at most n runes at spaces; a word longer
// than n is split.
func wrap(s string, n int) []string {
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		w := []rune(word)
		if len(cur) > 0 && len(cur)+1+len(w) > n {
			lines = append(lines, string(cur))
			cur = cur[:0]
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, w...)
		for len(cur) > n {
			lines = append(lines, string(cur[:n]))
			cur = append([]rune{}, cur[n:]...)
		}
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	return writeIndentedJSON(w, r)
}

// writeIndentedJSON writes v as one JSON document indented by two spaces,
// as every report's WriteJSON does.
func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// groundedRowsAre says what a grounded corpus's rows are: passages, or
// questions in a verl export (one row per question).
func groundedRowsAre(format string) string {
	if format == FormatVerl {
		return "questions"
	}
	return "passages"
}
