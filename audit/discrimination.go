package audit

import (
	"math"

	"github.com/rubricforge/rubricforge/discrim"
)

// Discrimination says how well the rubrics separate each record's correct
// rollouts from its flawed ones, measured on the stored satisfaction
// verdicts (package discrim has the definitions). Item counts are over the
// measured records; records without both sides or without verdicts are
// counted in Unmeasured, never as 0 or 1.
type Discrimination struct {
	Records    int64            `json:"records"` // math records read
	Measured   int64            `json:"measured"`
	Unmeasured UnmeasuredCounts `json:"unmeasured"`
	// RolloutsWithoutVerdicts counts rollouts of records with some
	// verdicts that were left out for having none that match the rubric.
	RolloutsWithoutVerdicts int64 `json:"rollouts_without_verdicts"`
	// MeanAUROC is the mean rubric AUROC over the measured records (the
	// --min-auroc gate's figure); MeanAUROCWithoutAnswer without the
	// ANSWER items. Null when no record is measured.
	MeanAUROC              *float64 `json:"mean_auroc"`
	MeanAUROCWithoutAnswer *float64 `json:"mean_auroc_without_answer"`
	// MeanAUROCCI95 and MeanAUROCWithoutAnswerCI95 are the means' 95%
	// intervals (a bootstrap over records and rollouts); null with them.
	MeanAUROCCI95              *[2]float64 `json:"mean_auroc_ci95"`
	MeanAUROCWithoutAnswerCI95 *[2]float64 `json:"mean_auroc_without_answer_ci95"`
	// NoAUROC counts the measured records left out of those means because
	// their rubric AUROC is undefined, and names the first of them.
	NoAUROC NoAUROC `json:"no_auroc"`
	// Paid is, for each record's own scheme ("default") and every scheme,
	// the mean AUROC of the reward the scheme pays (reward.RubricReward:
	// srar's type budgets, the others' weighted scores), without and with
	// ANSWER items, with 95% intervals.
	Paid []PaidAUROC `json:"paid_auroc"`
	// Refined is set when the corpus is a refinement by distill refine
	// (its refine.json read back): which rollouts decided its items, and
	// the held-out figures, which the --min-auroc gate then checks.
	Refined *Refined `json:"refined"`
	// AntiShare is anti-discriminative items over measured items (the
	// --max-anti-share gate's figure); AntiAlpha the Fisher p bound.
	AntiShare *float64 `json:"anti_share"`
	AntiAlpha float64  `json:"anti_alpha"`
	// JudgeError is the satisfaction judge's error rate that the
	// definitions of dead, saturated and redundant tolerate.
	JudgeError float64 `json:"judge_error"`
	// JudgeErrorFrom says where JudgeError came from: "given" (validate
	// --judge-error), "panel" (measured from the corpus's satisfaction
	// panels) or "default".
	JudgeErrorFrom string         `json:"judge_error_from"`
	ByType         []DiscrimCount `json:"by_type"`
	Total          DiscrimCount   `json:"total"`
	RecordsWith    DiscrimCount   `json:"records_with"` // measured records with at least one such item
	// RedundantPairs and NearDuplicatePairs are over measured records;
	// the near-duplicate texts of every record are NearDuplicatePairsAll
	// in NearDuplicateRecordsAll records.
	RedundantPairs          int64 `json:"redundant_pairs"`
	NearDuplicatePairs      int64 `json:"near_duplicate_pairs"`
	NearDuplicatePairsAll   int64 `json:"near_duplicate_pairs_all"`
	NearDuplicateRecordsAll int64 `json:"near_duplicate_records_all"`
	// Histograms: edges of the measured items over [-1, 1], rubric AUROCs
	// of the measured records over [0, 1], in twenty bins.
	EdgeHistogram               []Range    `json:"edge_histogram"`
	AUROCHistogram              []Range    `json:"auroc_histogram"`
	AUROCWithoutAnswerHistogram []Range    `json:"auroc_without_answer_histogram"`
	LowestAUROC                 []LowAUROC `json:"lowest_auroc"`
	// Needs says what to run when no record has satisfaction verdicts;
	// null when some record has them.
	Needs *string `json:"needs"`
}

// NoAUROC counts measured records whose rubric AUROC is undefined with
// ANSWER items (the weights counted sum to 0) and without (no item but
// ANSWER items, or their weights sum to 0), naming the first
// discrim.LowestKept of them.
type NoAUROC struct {
	WithAnswer    int64    `json:"with_answer"`
	WithoutAnswer int64    `json:"without_answer"`
	IDs           []string `json:"ids"`
}

// PaidAUROC is one scheme's paid-reward AUROC over the measured records.
type PaidAUROC struct {
	Scheme        string           `json:"scheme"`
	WithoutAnswer discrim.Estimate `json:"without_answer"`
	WithAnswer    discrim.Estimate `json:"with_answer"`
}

// Refined is what a refined corpus's refine.json says of it: the
// refinement's fingerprint and source, which rollouts decided the items,
// and the held-out (cross-fitted) AUROCs of the rubric score (validate's
// figure) and of the reward each record's scheme pays.
type Refined struct {
	Fingerprint  string            `json:"fingerprint"`
	From         string            `json:"refined_from"`
	Records      int64             `json:"records"`
	RolloutsUsed string            `json:"rollouts_used"`
	Folds        int               `json:"folds"`
	HeldOut      discrim.FigureSet `json:"heldout"`
	Default      discrim.FigureSet `json:"heldout_default_scheme"`
}

// UnmeasuredCounts counts the records not measured, by why.
type UnmeasuredCounts struct {
	NoItems     int64 `json:"no_items"`
	NoVerdicts  int64 `json:"no_verdicts"`
	OnlyCorrect int64 `json:"only_correct"`
	OnlyFlawed  int64 `json:"only_flawed"`
}

// DiscrimCount counts the measured items of one type (or, in
// records_with, the records) of each kind.
type DiscrimCount struct {
	Type          string `json:"type"`
	Items         int64  `json:"items"`
	Saturated     int64  `json:"saturated"`    // x = 1 on every rollout
	Saturated95   int64  `json:"saturated_95"` // x = 1 on >= 95% of the rollouts (saturated included)
	Dead          int64  `json:"dead"`
	NegativeEdge  int64  `json:"negative_edge"`
	Anti          int64  `json:"anti"`
	Redundant     int64  `json:"redundant"`
	NearDuplicate int64  `json:"near_duplicate"`
}

// LowAUROC is one of the records of lowest rubric AUROC.
type LowAUROC struct {
	RecordID string  `json:"record_id"`
	AUROC    float64 `json:"auroc"`
	Correct  int     `json:"correct"`
	Flawed   int     `json:"flawed"`
}

// needsEmpirical is what Needs says. RUN stands for the run directory (the
// text report writes the corpus's path there when it is one).
const needsEmpirical = "no record has satisfaction verdicts (rollouts[].satisfaction): they come from the empirical stage. " +
	"Run the job again with it on, into a new directory with this run's cache " +
	"(rollouts and rubrics come from the cache; only the satisfaction requests are sent): " +
	"distill run --config JOB.yaml --empirical --out RUN-empirical --cache RUN/cache.db"

// discAcc measures each math record's discrimination as it is read.
type discAcc struct {
	opt      discrim.Options
	agg      *discrim.Aggregate
	m        discrim.Matrix
	skipped  int64 // rollouts without matching verdicts in records with some
	verdicts int64 // records with at least one judged rollout
}

func newDiscAcc(opt discrim.Options) discAcc { return discAcc{opt: opt, agg: discrim.NewAggregate()} }

func (d *discAcc) add(r *row) {
	m := &d.m
	m.Reset(r.Style)
	for i := range r.Rubric {
		it := &r.Rubric[i]
		m.AddItem(it.ID, it.Type, it.Text, it.Weight, it.Polarity)
	}
	for i := range r.Rollouts {
		ro := &r.Rollouts[i]
		m.AddJudged(ro.Index, ro.Correct, len(ro.Satisfaction),
			func(k int) int32 { return ro.Satisfaction[k].ID }, func(k int) bool { return ro.Satisfaction[k].Satisfied })
	}
	if m.Rollouts() > 0 {
		d.verdicts++
		d.skipped += int64(m.Skipped)
	}
	st := discrim.Measure(m, nil, d.opt)
	d.agg.Add(r.ID, &st)
	d.agg.AddScores(r.ID, m, &st)
}

func (d *discAcc) merge(o *discAcc) {
	d.agg.Merge(o.agg)
	d.skipped += o.skipped
	d.verdicts += o.verdicts
}

func (d *discAcc) report() *Discrimination {
	g := d.agg
	out := &Discrimination{
		Records: g.Records, Measured: g.Measured, RolloutsWithoutVerdicts: d.skipped, AntiAlpha: discrim.DefaultAntiAlpha, JudgeError: d.opt.JudgeErrorOf(),
		Unmeasured: UnmeasuredCounts{NoItems: g.Unmeasured[discrim.NoItems], NoVerdicts: g.Unmeasured[discrim.NoVerdicts],
			OnlyCorrect: g.Unmeasured[discrim.OnlyCorrect], OnlyFlawed: g.Unmeasured[discrim.OnlyFlawed]},
		ByType: []DiscrimCount{}, RedundantPairs: g.RedundantPairs, NearDuplicatePairs: g.NearDuplicatePairs,
		NearDuplicatePairsAll: g.TextPairsAll, NearDuplicateRecordsAll: g.TextRecordsAll,
		EdgeHistogram: ranges(&g.Edges), AUROCHistogram: ranges(&g.AUROC), AUROCWithoutAnswerHistogram: ranges(&g.AUROCNoAnswer),
		LowestAUROC: []LowAUROC{},
	}
	if m, ok := g.MeanAUROC(true); ok {
		out.MeanAUROC = &m
		out.MeanAUROCCI95 = ci95(g.Scores, 0)
	}
	if m, ok := g.MeanAUROC(false); ok {
		out.MeanAUROCWithoutAnswer = &m
		out.MeanAUROCWithoutAnswerCI95 = ci95(g.Scores, 1)
	}
	out.NoAUROC = NoAUROC{WithAnswer: g.NoAUROC, WithoutAnswer: g.NoAUROCNoAnswer, IDs: append([]string{}, g.NoAUROCIDs...)}
	out.Paid = paidAUROCs(g.Scores)
	if s, ok := g.AntiShare(); ok {
		out.AntiShare = &s
	}
	for _, t := range g.Types() {
		out.ByType = append(out.ByType, discrimCount(t, g.ByType[t]))
	}
	total := g.Total()
	out.Total = discrimCount("Total", &total)
	out.RecordsWith = discrimCount("records", &g.RecordsWith)
	for _, l := range g.Lowest {
		out.LowestAUROC = append(out.LowestAUROC, LowAUROC{RecordID: l.ID, AUROC: l.AUROC, Correct: l.Correct, Flawed: l.Flawed})
	}
	if d.verdicts == 0 && g.Records > g.Unmeasured[discrim.NoItems] {
		out.Needs = addr(needsEmpirical)
	}
	return out
}

// ci95 is series k's interval in b; nil without one.
func ci95(b *discrim.Boot, k int) *[2]float64 {
	if b == nil {
		return nil
	}
	e := b.Estimate(k)
	if e.Records == 0 {
		return nil
	}
	return &e.CI95
}

// paidAUROCs are the paid figures of b (discrim.PaidFigures, after the two
// rubric series), one entry per scheme; none when b is nil.
func paidAUROCs(b *discrim.Boot) []PaidAUROC {
	out := []PaidAUROC{}
	if b == nil {
		return out
	}
	for k, f := range discrim.PaidFigures {
		if !f.WithAnswer {
			out = append(out, PaidAUROC{Scheme: f.Scheme, WithoutAnswer: b.Estimate(2 + k)})
		} else {
			out[len(out)-1].WithAnswer = b.Estimate(2 + k)
		}
	}
	return out
}

func discrimCount(t string, c *discrim.Counts) DiscrimCount {
	return DiscrimCount{Type: t, Items: c.Items, Saturated: c.Saturated, Saturated95: c.Saturated95, Dead: c.Dead,
		NegativeEdge: c.NegativeEdge, Anti: c.Anti, Redundant: c.Redundant, NearDuplicate: c.NearDuplicate}
}

func ranges(h *discrim.Histogram) []Range {
	out := make([]Range, len(h.Counts))
	width := (h.Hi - h.Lo) / float64(len(h.Counts))
	for k, n := range h.Counts {
		out[k] = Range{Lo: roundTo4(h.Lo + float64(k)*width), Hi: roundTo4(h.Lo + float64(k+1)*width), Count: n}
	}
	return out
}

// roundTo4 rounds x to four decimals, negative values too.
func roundTo4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
