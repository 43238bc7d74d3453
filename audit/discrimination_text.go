package audit

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/discrim"
)

func (r *Report) textDiscrimination(w io.Writer) {
	d := r.Discrimination
	if d == nil {
		return
	}
	heading(w, "Discrimination (edge = good-side satisfaction among correct minus among flawed rollouts)")
	u := d.Unmeasured
	fmt.Fprintf(w, "  %s of %s records measured (they have correct and flawed rollouts with verdicts)\n", num(d.Measured), num(d.Records))
	fmt.Fprintln(w, clip(fmt.Sprintf("  unmeasured: %s only correct, %s only flawed, %s without verdicts, %s without items",
		num(u.OnlyCorrect), num(u.OnlyFlawed), num(u.NoVerdicts), num(u.NoItems))))
	if d.Needs != nil {
		why, command, _ := strings.Cut(*d.Needs, "distill run ")
		for _, l := range wrap(why, Width-4) {
			fmt.Fprintln(w, "  "+l)
		}
		if c := r.Corpus; c.Kind == KindRun && len(c.Paths) == 1 {
			command = strings.ReplaceAll(command, "RUN", filepath.Clean(c.Paths[0]))
		}
		fmt.Fprintln(w, "    distill run "+command)
		return
	}
	if d.RolloutsWithoutVerdicts > 0 {
		fmt.Fprintf(w, "  %s rollouts without verdicts left out of records that have some\n", num(d.RolloutsWithoutVerdicts))
	}
	if d.Measured == 0 {
		return
	}
	fmt.Fprintf(w, "  rubric AUROC: mean %s%s, without ANSWER items %s%s\n",
		fix(d.MeanAUROC, 3), interval(d.MeanAUROCCI95), fix(d.MeanAUROCWithoutAnswer, 3), interval(d.MeanAUROCWithoutAnswerCI95))
	fmt.Fprintln(w, "  (95% intervals over records and rollouts)")
	if n := d.NoAUROC; n.WithAnswer+n.WithoutAnswer > 0 {
		for _, l := range wrap(fmt.Sprintf("%s measured records have no rubric AUROC with ANSWER items and %s without (weights summing to 0, or only ANSWER items), left out of those means: %s%s",
			num(n.WithAnswer), num(n.WithoutAnswer), strings.Join(n.IDs, ", "), moreIDs(max(n.WithAnswer, n.WithoutAnswer), len(n.IDs))), Width-4) {
			fmt.Fprintln(w, "  "+l)
		}
	}
	r.textRefined(w)
	r.textPaid(w)
	fmt.Fprintf(w, "  saturated, dead, redundant: within a judge error rate of %s (%s)\n", formatFloat(round4(d.JudgeError)), judgeErrorWords[d.JudgeErrorFrom])
	fmt.Fprintf(w, "  anti-discriminative: %s of the items (edge < 0, Fisher p <= %s under Benjamini-Hochberg)\n", pct(d.AntiShare), formatFloat(d.AntiAlpha))
	t := newTable("type", "items", "saturated", ">=95%", "dead", "edge < 0", "anti", "redundant", "near-dup text")
	for _, c := range append(slices.Clone(d.ByType), d.Total, d.RecordsWith) {
		t.add(c.Type, num(c.Items), num(c.Saturated), num(c.Saturated95), num(c.Dead), num(c.NegativeEdge), num(c.Anti), num(c.Redundant), num(c.NearDuplicate))
	}
	t.write(w)
	fmt.Fprintln(w, "  (records: measured records with at least one such item)")
	fmt.Fprintf(w, "  redundant pairs %s; near-duplicate text pairs %s (in every record: %s pairs in %s records)\n",
		num(d.RedundantPairs), num(d.NearDuplicatePairs), num(d.NearDuplicatePairsAll), num(d.NearDuplicateRecordsAll))
	fmt.Fprintln(w)
	writeRanges(w, "item edge", halve(d.EdgeHistogram), d.Total.Items, 1)
	fmt.Fprintln(w)
	writeRanges(w, "rubric AUROC", halve(d.AUROCHistogram), d.Measured, 1)
	if len(d.LowestAUROC) > 0 {
		fmt.Fprintf(w, "\n  the %d records of lowest rubric AUROC:\n", len(d.LowestAUROC))
		t = newTable("record", "AUROC", "correct", "flawed")
		for _, l := range d.LowestAUROC {
			t.add(l.RecordID, strconv.FormatFloat(l.AUROC, 'f', 3, 64), strconv.Itoa(l.Correct), strconv.Itoa(l.Flawed))
		}
		t.write(w)
	}
}

// halve merges a histogram's bins two by two (ten lines in the text
// report; the JSON and the page keep twenty).
func halve(bins []Range) []Range {
	out := make([]Range, 0, (len(bins)+1)/2)
	for k := 0; k < len(bins); k += 2 {
		b := bins[k]
		if k+1 < len(bins) {
			b.Hi, b.Count = bins[k+1].Hi, b.Count+bins[k+1].Count
		}
		out = append(out, b)
	}
	return out
}

// interval is " [lo, hi]" of a 95% interval, "" without one.
func interval(ci *[2]float64) string {
	if ci == nil {
		return ""
	}
	return fmt.Sprintf(" [%.3f, %.3f]", ci[0], ci[1])
}

// textPaid prints the AUROC of the reward each scheme pays.
func (r *Report) textPaid(w io.Writer) {
	d := r.Discrimination
	if len(d.Paid) == 0 {
		return
	}
	fmt.Fprintln(w, "  AUROC of the reward each scheme pays (default: each record's own scheme):")
	t := newTable("scheme", "without ANSWER items", "with ANSWER items")
	for _, p := range d.Paid {
		t.add(p.Scheme, estimate(p.WithoutAnswer), estimate(p.WithAnswer))
	}
	t.write(w)
}

func estimate(e discrim.Estimate) string {
	if e.Records == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", e.Mean, e.CI95[0], e.CI95[1])
}

// textRefined says, of a refined corpus, which rollouts decided its items
// and the held-out figures.
func (r *Report) textRefined(w io.Writer) {
	ref := r.Discrimination.Refined
	if ref == nil {
		return
	}
	h := ref.HeldOut
	lines := []string{
		fmt.Sprintf("this corpus is a refinement (distill refine, fingerprint %s, from %s): %s, so the AUROCs here are in-sample.", ref.Fingerprint, ref.From, ref.RolloutsUsed),
		fmt.Sprintf("held out (cross-fitted on %d folds, over %s refined records), its rubric AUROC is %.3f [%.3f, %.3f] (before the refinement %.3f), without ANSWER items %.3f [%.3f, %.3f] (before %.3f); --min-auroc checks the held-out figure.",
			ref.Folds, num(h.WithAnswer.Records), h.WithAnswer.After, h.WithAnswer.AfterCI95[0], h.WithAnswer.AfterCI95[1], h.WithAnswer.Before,
			h.WithoutAnswer.After, h.WithoutAnswer.AfterCI95[0], h.WithoutAnswer.AfterCI95[1], h.WithoutAnswer.Before),
	}
	for _, l := range lines {
		for _, part := range wrap(l, Width-4) {
			fmt.Fprintln(w, "  "+part)
		}
	}
}

// moreIDs says how many records beyond the named ones there are.
func moreIDs(n int64, named int) string {
	if n > int64(named) {
		return fmt.Sprintf(" and %s more", num(n-int64(named)))
	}
	return ""
}

// judgeErrorWords say where the judge error rate came from.
var judgeErrorWords = map[string]string{
	JudgeErrorGiven:   "--judge-error",
	JudgeErrorPanel:   "measured from the corpus's judge panels",
	JudgeErrorDefault: "the default",
}
