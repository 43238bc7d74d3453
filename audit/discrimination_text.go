package audit

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	fmt.Fprintf(w, "  rubric AUROC: mean %s (without ANSWER items %s)\n", fix(d.MeanAUROC, 3), fix(d.MeanAUROCWithoutAnswer, 3))
	fmt.Fprintf(w, "  anti-discriminative: %s of the items (edge < 0 and one-sided Fisher p <= %s)\n", pct(d.AntiShare), formatFloat(d.AntiAlpha))
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
