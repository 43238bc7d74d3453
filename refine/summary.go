package refine

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
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
	// JudgeError is the satisfaction judge's error rate the rules
	// tolerated, and where it came from.
	JudgeError JudgeErrorUsed `json:"judge_error"`
	// Folds is how many folds the held-out figures are cross-fitted on.
	Folds int `json:"folds"`
	// HeldOut is the mean AUROC, before and after, of the reward each
	// record's own scheme pays (srar's for srar records, rgr's for
	// factual_process ones), cross-fitted, over the refined records with a
	// held-out pair; Fit the same in-sample, on every rollout the rubric
	// was decided on. ByScheme holds both for every scheme and for the
	// rubric score (discrim.RubricScore).
	HeldOut  FigureSet                 `json:"heldout"`
	Fit      FigureSet                 `json:"fit"`
	ByScheme map[string]*SchemeFigures `json:"by_scheme"`
	// NoHeldOut counts the refined records without a held-out figure.
	NoHeldOut NoHeldOut `json:"no_heldout"`
	// Decomposed is what --decompose did; zero without it.
	Decomposed DecomposeCounts `json:"decomposed"`

	held, fit *discrim.Boot
}

// JudgeErrorUsed is a judge error rate and its source: "default", "flag"
// (--judge-error, e.g. measured against people's labels) or "panel"
// (measured from the corpus's judge panels).
type JudgeErrorUsed struct {
	Rate float64 `json:"rate"`
	From string  `json:"from"`
}

// FigureSet is one figure without and with ANSWER items (discrim's).
type FigureSet = discrim.FigureSet

// SchemeFigures are one scheme's figures, and what refine's weights do to
// the reward it pays.
type SchemeFigures struct {
	HeldOut FigureSet `json:"heldout"`
	Fit     FigureSet `json:"fit"`
	Weights string    `json:"weights"`
}

// Change is a mean AUROC before and after with the change's 95% interval
// (discrim's).
type Change = discrim.Change

// NoHeldOut counts refined records that have no held-out pair (with
// --decompose, a record whose rollouts not shown to the model lack a
// side), naming the first NoHeldOutListed.
type NoHeldOut struct {
	Records int64    `json:"records"`
	IDs     []string `json:"ids"`
}

// NoHeldOutListed is how many records without a held-out figure the
// summary names.
const NoHeldOutListed = 10

// schemeWeights says, per figure, whether refine's new weights reach the
// reward it pays.
var schemeWeights = map[string]string{
	schema.SchemeSRaR:     "none: srar pays type budgets (seed 000 eq. 3), so the new weights do not reach its reward; the dropped items do",
	schema.SchemeRGR:      "the weighted fraction of criteria met reads each kept item's new weight (1 when every FACTUAL item holds)",
	schema.SchemeGrounded: "the weighted score reads each kept item's new weight",
	schema.SchemeRLCER:    "the signed points read each kept item's new weight, over the items valid in the group",
	schema.SchemePAPO:     "its process reward, the weighted score, reads each kept item's new weight; papo pays it among correct rollouts only",
	discrim.RubricScore:   "validate's rubric score: the weighted score with an srar item stored without a weight counted 1",
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
	// UnmeasuredFit counts records with verdicts that were not refined
	// (a side missing, or fewer than --min-side); Unmeasured every
	// unrefined record by reason.
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

// figureSeries: for figure k of discrim.Figures, series 2k is before and
// 2k+1 after; diff k (series 2·len + k) is after − before.
func newFigureBoot() *discrim.Boot {
	n := len(discrim.Figures())
	diffs := make([][2]int, n)
	for k := range diffs {
		diffs[k] = [2]int{2*k + 1, 2 * k}
	}
	return discrim.NewBoot(2*n, diffs)
}

// Add counts one decided record into the summary (Run adds every record
// it reads; a caller that decides records itself, a benchmark, adds them
// here). Call Finish once all are in.
func (s *Summary) Add(d *Decision) {
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
	s.Folds = max(s.Folds, d.Held.Folds)
	if d.eval == nil {
		return
	}
	if d.Held.Pairs == 0 {
		s.NoHeldOut.Records++
		if len(s.NoHeldOut.IDs) < NoHeldOutListed {
			s.NoHeldOut.IDs = append(s.NoHeldOut.IDs, d.ID)
		}
	}
	if s.held == nil {
		s.held, s.fit = newFigureBoot(), newFigureBoot()
	}
	s.held.Add(d.eval.seed, d.eval.held, d.eval.heldScores)
	s.fit.Add(d.eval.seed, d.eval.fit, d.eval.fitScores)
}

// Finish computes the means and intervals of the records added.
func (s *Summary) Finish() {
	if s.NoHeldOut.IDs == nil {
		s.NoHeldOut.IDs = []string{}
	}
	s.ByScheme = map[string]*SchemeFigures{}
	for _, name := range append(slices.Clone(schema.Schemes), discrim.RubricScore) {
		s.ByScheme[name] = &SchemeFigures{Weights: schemeWeights[name]}
	}
	if s.held == nil {
		return
	}
	n := len(discrim.Figures())
	for k, f := range discrim.Figures() {
		held, fit := change(s.held, k, n), change(s.fit, k, n)
		if f.Scheme == discrim.DefaultScheme {
			setFigure(&s.HeldOut, f, held)
			setFigure(&s.Fit, f, fit)
			continue
		}
		setFigure(&s.ByScheme[f.Scheme].HeldOut, f, held)
		setFigure(&s.ByScheme[f.Scheme].Fit, f, fit)
	}
}

func setFigure(set *FigureSet, f discrim.Figure, c Change) {
	if f.WithAnswer {
		set.WithAnswer = c
	} else {
		set.WithoutAnswer = c
	}
}

// change is figure k's Change from b (n figures).
func change(b *discrim.Boot, k, n int) Change { return discrim.ChangeOf(b, 2*k, 2*k+1, 2*n+k) }

// CheckGain is the --min-gain gate: an error unless the 95% interval of
// the held-out change of the rubric's own signal (the record's scheme,
// without ANSWER items) lies at or above min.
func (s *Summary) CheckGain(min float64) error {
	c := s.HeldOut.WithoutAnswer
	switch {
	case c.Records == 0:
		return fmt.Errorf("no refined record has a held-out AUROC, so the change cannot be checked against --min-gain %s", fmtG(min))
	case c.CI95[0] < min:
		return fmt.Errorf("the held-out change of the rubric's own signal (without ANSWER items) is %+.3f, 95%% interval [%+.3f, %+.3f]: its lower bound %.3f is below --min-gain %s",
			c.Change, c.CI95[0], c.CI95[1], c.CI95[0], fmtG(min))
	}
	return nil
}

func fmtG(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

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
	s.writeFigures(w)
}

// schemeNotes are the text report's notes on the schemes.
var schemeNotes = map[string]string{
	schema.SchemeSRaR:   "(the new weights do not reach it: srar pays type budgets; the drops do)",
	schema.SchemePAPO:   "(paid among correct rollouts only)",
	discrim.RubricScore: "(validate's rubric AUROC)",
}

// writeFigures prints the held-out figures, the rubric's own signal first,
// with the in-sample ones beside them, then every scheme's.
func (s *Summary) writeFigures(w io.Writer) {
	h := s.HeldOut
	if h.WithoutAnswer.Records == 0 {
		fmt.Fprintln(w, "held-out AUROC: no refined record has a correct and a flawed rollout in one fold; nothing to measure")
		return
	}
	fmt.Fprintf(w, "held-out AUROC of the reward each record's scheme pays (srar records: srar's, factual_process: rgr's), cross-fitted on %d folds,\n", s.Folds)
	fmt.Fprintf(w, "over %s; the change with its 95%% interval over records and rollouts:\n", plural(h.WithoutAnswer.Records, "record"))
	fmt.Fprintf(w, "  without ANSWER items (the rubric's own signal): %s (in-sample %.3f -> %.3f)\n", verdict(h.WithoutAnswer), s.Fit.WithoutAnswer.Before, s.Fit.WithoutAnswer.After)
	fmt.Fprintf(w, "  with ANSWER items:                              %s (in-sample %.3f -> %.3f)\n", verdict(h.WithAnswer), s.Fit.WithAnswer.Before, s.Fit.WithAnswer.After)
	fmt.Fprintln(w, "  (held out: each fold's rollouts scored by the rubric decided on the other folds, compared within the fold;")
	fmt.Fprintln(w, "  in-sample: the refined rubric on the rollouts it was decided on, which is what validate sees in the refined corpus)")
	if n := s.NoHeldOut.Records; n > 0 {
		fmt.Fprintf(w, "  %d refined records have no held-out pair and are not in these means: %s%s\n", n, strings.Join(s.NoHeldOut.IDs, ", "), more(n, len(s.NoHeldOut.IDs)))
	}
	fmt.Fprintln(w, "by scheme, held out, without ANSWER items:")
	for _, name := range append(slices.Clone(schema.Schemes), discrim.RubricScore) {
		if f := s.ByScheme[name]; f != nil {
			fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %-8s %s %s", name, verdict(f.HeldOut.WithoutAnswer), schemeNotes[name]), " "))
		}
	}
	if !h.WithoutAnswer.Raised {
		fmt.Fprintln(w, "the refinement did not raise the rubric's own held-out AUROC: the 95% interval of the change does not lie above 0")
	}
}

// verdict is a change with its interval and whether it is raised.
func verdict(c Change) string {
	word := "NOT raised"
	switch {
	case c.Raised:
		word = "raised"
	case c.Lowered:
		word = "lowered"
	}
	return fmt.Sprintf("%.3f -> %.3f, %+.3f [%+.3f, %+.3f] %s", c.Before, c.After, c.Change, c.CI95[0], c.CI95[1], word)
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func more(n int64, listed int) string {
	if n > int64(listed) {
		return fmt.Sprintf(", and %d more: refine-records.jsonl", n-int64(listed))
	}
	return ""
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
