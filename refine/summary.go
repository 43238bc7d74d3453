package refine

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Summary is what a refinement did, overall (refine.json).
type Summary struct {
	Source             string            `json:"source"`
	SourceFingerprints []string          `json:"source_fingerprints"`
	Fingerprint        string            `json:"fingerprint"`
	Settings           map[string]string `json:"settings"`
	DryRun             bool              `json:"dry_run"`
	// AlreadyDone is true when --out already held this refinement.
	AlreadyDone bool         `json:"already_done,omitempty"`
	Records     RecordCounts `json:"records"`
	Items       ItemCounts   `json:"items"`
	// HeldOut is the mean rubric AUROC on the held-out halves of the
	// records where it is defined both before and after.
	HeldOut HeldOutSummary `json:"held_out"`
	// Decomposed is what --decompose did; zero without it.
	Decomposed DecomposeCounts `json:"decomposed"`
}

// DecomposeCounts count the finer items --decompose proposed in place of
// saturated ones, and what became of them.
type DecomposeCounts struct {
	// Units is the records whose saturated items were sent; Failed those
	// the pipeline could not decompose (failures.jsonl of its run);
	// Unjudged those whose finer items lack verdicts on some rollout, so
	// that they were left out; Requests is what the decomposition's run
	// sent over every session (answers from its cache not counted).
	Units    int64 `json:"units"`
	Failed   int64 `json:"failed"`
	Unjudged int64 `json:"unjudged"`
	Requests int64 `json:"requests"`
	// Proposed finer items, Kept, and Dropped by reason.
	Proposed int64            `json:"proposed"`
	Kept     int64            `json:"kept"`
	Dropped  map[string]int64 `json:"dropped,omitempty"`
}

func (c *DecomposeCounts) add(it *ItemDecision) {
	c.Proposed++
	if it.Drop == "" {
		c.Kept++
		return
	}
	if c.Dropped == nil {
		c.Dropped = map[string]int64{}
	}
	c.Dropped[it.Drop]++
}

// RecordCounts count the records read.
type RecordCounts struct {
	Read     int64 `json:"read"`
	Measured int64 `json:"refined"`
	// UnmeasuredFit counts records with verdicts whose fit half lacks a
	// side; Unmeasured every unrefined record by reason.
	UnmeasuredFit int64            `json:"unmeasured_with_verdicts"`
	Unmeasured    map[string]int64 `json:"unmeasured"`
}

// ItemCounts count the items of the refined records.
type ItemCounts struct {
	In       int64            `json:"in"`
	Out      int64            `json:"out"`
	Dropped  map[string]int64 `json:"dropped"` // by reason
	Restored int64            `json:"restored"`
}

// HeldOutSummary is the held-out AUROC before and after, with and without
// ANSWER items.
type HeldOutSummary struct {
	WithAnswer AUROCChange `json:"with_answer"`
	NoAnswer   AUROCChange `json:"without_answer"`
}

// AUROCChange is a mean AUROC over Records records before and after, and
// how many records it rose, fell or stayed in.
type AUROCChange struct {
	Records               int64   `json:"records"`
	Before, After         float64 `json:"-"`
	MeanBefore            float64 `json:"mean_before"`
	MeanAfter             float64 `json:"mean_after"`
	Raised, Lowered, Same int64   `json:"-"`
	RaisedIn              int64   `json:"raised_in"`
	LoweredIn             int64   `json:"lowered_in"`
	SameIn                int64   `json:"same_in"`
}

func (c *AUROCChange) add(before, after *float64) {
	if before == nil || after == nil {
		return
	}
	c.Records++
	c.Before += *before
	c.After += *after
	switch d := *after - *before; {
	case d > 1e-12:
		c.RaisedIn++
	case d < -1e-12:
		c.LoweredIn++
	default:
		c.SameIn++
	}
}

func (c *AUROCChange) finish() {
	if c.Records > 0 {
		c.MeanBefore, c.MeanAfter = c.Before/float64(c.Records), c.After/float64(c.Records)
	}
}

// Rose reports whether the refinement raised the mean held-out AUROC.
func (c AUROCChange) Rose() bool { return c.Records > 0 && c.MeanAfter > c.MeanBefore }

func (s *Summary) add(d *Decision) {
	s.Records.Read++
	if d.Unmeasured != "" {
		if s.Records.Unmeasured == nil {
			s.Records.Unmeasured = map[string]int64{}
		}
		s.Records.Unmeasured[d.Unmeasured]++
		if !strings.HasPrefix(d.Unmeasured, "style_") && d.Unmeasured != "no_verdicts" {
			s.Records.UnmeasuredFit++
		}
		return
	}
	s.Records.Measured++
	for _, it := range d.Items {
		if it.Finer {
			s.Decomposed.add(&it)
			continue
		}
		s.Items.In++
		switch {
		case it.Drop != "":
			if s.Items.Dropped == nil {
				s.Items.Dropped = map[string]int64{}
			}
			s.Items.Dropped[it.Drop]++
		default:
			s.Items.Out++
		}
		if it.Restored {
			s.Items.Restored++
		}
	}
	s.HeldOut.WithAnswer.add(d.Held.Before, d.Held.After)
	s.HeldOut.NoAnswer.add(d.Held.BeforeNoAnswer, d.Held.AfterNoAnswer)
}

func (s *Summary) finish() {
	s.HeldOut.WithAnswer.finish()
	s.HeldOut.NoAnswer.finish()
}

// WriteText prints the summary for a person, naming the source and the
// output as the user gave them.
func (s *Summary) WriteText(w io.Writer, src, out string) {
	if s.AlreadyDone {
		fmt.Fprintf(w, "refine: %s already holds this refinement of %s (fingerprint %s); nothing to do\n", out, src, s.Fingerprint)
		return
	}
	verb := "refined"
	if s.DryRun {
		verb = "would refine (dry run, nothing written)"
	}
	fmt.Fprintf(w, "refine: %s %s", verb, src)
	if !s.DryRun {
		fmt.Fprintf(w, " into %s", out)
	}
	fmt.Fprintf(w, " (fingerprint %s, source job %s)\n", s.Fingerprint, orNone(strings.Join(s.SourceFingerprints, ", ")))
	r := s.Records
	fmt.Fprintf(w, "records: %d read, %d refined, %d copied unchanged%s\n", r.Read, r.Measured, r.Read-r.Measured, reasons(r.Unmeasured))
	it := s.Items
	fmt.Fprintf(w, "items of refined records: %d in, %d kept, %d dropped", it.In, it.Out, it.In-it.Out)
	if it.In > it.Out {
		fmt.Fprintf(w, " (%s)", dropList(it.Dropped))
	}
	fmt.Fprintln(w)
	if it.Restored > 0 {
		fmt.Fprintf(w, "  %d items the statistics would drop are kept so that rubrics hold their style's rules\n", it.Restored)
	}
	switch dc := s.Decomposed; {
	case dc.Units > 0:
		fmt.Fprintf(w, "decompose: saturated items of %d records sent (%d requests sent, over every session); %d finer items proposed, %d kept", dc.Units, dc.Requests, dc.Proposed, dc.Kept)
		if dc.Proposed > dc.Kept {
			fmt.Fprintf(w, ", %d dropped (%s)", dc.Proposed-dc.Kept, dropList(dc.Dropped))
		}
		fmt.Fprintln(w)
		if dc.Failed > 0 {
			fmt.Fprintf(w, "  %d records could not be decomposed (DST/%s/failures.jsonl says why): their saturated items are dropped\n", dc.Failed, DecomposeDir)
		}
		if dc.Unjudged > 0 {
			fmt.Fprintf(w, "  %d records lack verdicts on their finer items for some rollouts: their saturated items are dropped\n", dc.Unjudged)
		}
	case it.Dropped[DropSaturated] > 0 && !strings.HasPrefix(s.Settings["decompose"], "on"):
		fmt.Fprintf(w, "  saturated items are dropped; --decompose splits them into finer items (requests to the distiller and the judges)\n")
	}
	fmt.Fprintln(w, "held-out rubric AUROC (mean over records measurable on both halves; fit on the other half):")
	for _, c := range []struct {
		name string
		c    AUROCChange
	}{{"with ANSWER items", s.HeldOut.WithAnswer}, {"without ANSWER items", s.HeldOut.NoAnswer}} {
		if c.c.Records == 0 {
			fmt.Fprintf(w, "  %-21s not measurable (no record has both sides in both halves)\n", c.name+":")
			continue
		}
		verdict := "raised"
		if !c.c.Rose() {
			verdict = "NOT raised"
		}
		fmt.Fprintf(w, "  %-21s %.3f -> %.3f (%+.3f, %s) over %d records: up in %d, down in %d, same in %d\n",
			c.name+":", c.c.MeanBefore, c.c.MeanAfter, c.c.MeanAfter-c.c.MeanBefore, verdict, c.c.Records, c.c.RaisedIn, c.c.LoweredIn, c.c.SameIn)
	}
	if !s.HeldOut.WithAnswer.Rose() && !s.HeldOut.NoAnswer.Rose() {
		fmt.Fprintln(w, "the refinement did not raise the held-out rubric AUROC")
	}
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func reasons(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], strings.ReplaceAll(k, "_", " ")))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func dropList(m map[string]int64) string {
	var parts []string
	for _, k := range []string{DropAnti, DropDead, DropSaturated, DropRedundant, DropNoEdge, DropInvalid} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
