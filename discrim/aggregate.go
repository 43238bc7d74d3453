package discrim

import (
	"cmp"
	"math"
	"slices"

	"github.com/rubricforge/rubricforge/schema"
)

// HistBins is the number of equal bins of every histogram.
const HistBins = 20

// Histogram counts values in HistBins equal bins [Lo + k·width, Lo +
// (k+1)·width); the last bin also holds Hi.
type Histogram struct {
	Lo, Hi float64
	Counts [HistBins]int64
}

// Add counts x (values outside [Lo, Hi] go to the nearer end bin).
func (h *Histogram) Add(x float64) {
	k := int(math.Floor((x-h.Lo)*HistBins/(h.Hi-h.Lo) + 1e-9))
	h.Counts[min(max(k, 0), HistBins-1)]++
}

func (h *Histogram) merge(o *Histogram) {
	for k := range h.Counts {
		h.Counts[k] += o.Counts[k]
	}
}

// Counts are items (or, in RecordsWith, records) of each kind.
type Counts struct {
	Items         int64 // items measured (records, in RecordsWith)
	Saturated     int64
	Saturated95   int64
	Dead          int64
	NegativeEdge  int64 // edge < 0, beyond noise or not
	Anti          int64 // anti-discriminative: edge < 0 beyond noise
	Redundant     int64 // in a redundant pair
	NearDuplicate int64 // in a near-duplicate text pair
}

func (c *Counts) merge(o *Counts) {
	c.Items += o.Items
	c.Saturated += o.Saturated
	c.Saturated95 += o.Saturated95
	c.Dead += o.Dead
	c.NegativeEdge += o.NegativeEdge
	c.Anti += o.Anti
	c.Redundant += o.Redundant
	c.NearDuplicate += o.NearDuplicate
}

// addItem counts one measured item.
func (c *Counts) addItem(s *ItemStats) {
	c.Items++
	c.Saturated += b2i(s.Saturated)
	c.Saturated95 += b2i(s.Saturated95)
	c.Dead += b2i(s.Dead)
	c.NegativeEdge += b2i(s.HasEdge && s.Edge < 0)
	c.Anti += b2i(s.Anti)
	c.Redundant += b2i(s.Redundant)
	c.NearDuplicate += b2i(s.NearDuplicate)
}

// any is 1 in each field where c counts at least one item.
func (c *Counts) any() Counts {
	one := func(n int64) int64 { return min(n, 1) }
	return Counts{Items: 1, Saturated: one(c.Saturated), Saturated95: one(c.Saturated95), Dead: one(c.Dead),
		NegativeEdge: one(c.NegativeEdge), Anti: one(c.Anti), Redundant: one(c.Redundant), NearDuplicate: one(c.NearDuplicate)}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// LowestKept is how many records of lowest rubric AUROC an Aggregate keeps.
const LowestKept = 10

// Low is a record of low rubric AUROC.
type Low struct {
	ID              string
	AUROC           float64
	Correct, Flawed int
}

// Aggregate folds records' measurements into counts and histograms whose
// size does not grow with the corpus (LowestKept records are named). Item
// counts are over measured records only; TextPairsAll and TextRecordsAll
// count near-duplicate texts over every record added, measured or not.
type Aggregate struct {
	Records    int64 // records added
	Measured   int64
	Unmeasured [nReasons]int64 // by Reason; Unmeasured[Measured] stays 0
	ByType     map[string]*Counts
	// RecordsWith counts measured records (Items) and those with at least
	// one item of each kind.
	RecordsWith                        Counts
	RedundantPairs, NearDuplicatePairs int64 // in measured records
	TextPairsAll, TextRecordsAll       int64
	// Edges is the histogram of the measured items' edges over [−1, 1];
	// AUROC and AUROCNoAnswer those of the records' rubric AUROCs over
	// [0, 1].
	Edges, AUROC, AUROCNoAnswer Histogram
	AUROCSum, AUROCNoAnswerSum  float64
	AUROCN, AUROCNoAnswerN      int64
	Lowest                      []Low
	// NoAUROC and NoAUROCNoAnswer count the measured records whose rubric
	// AUROC is undefined (with, without ANSWER items); NoAUROCIDs names
	// the first LowestKept of them.
	NoAUROC, NoAUROCNoAnswer int64
	NoAUROCIDs               []string
	// Scores holds the series of AddScores (nil until the first): the
	// rubric AUROC with and without ANSWER items, then PaidFigures.
	Scores *Boot
	scorer Scorer
	buf    [][]float64
}

// PaidFigures are the figures of Aggregate.Scores after the two rubric
// ones: each record's own scheme, then every scheme, each without ANSWER
// items, then with.
var PaidFigures = func() []Figure {
	var out []Figure
	for _, f := range Figures() {
		if f.Scheme != RubricScore {
			out = append(out, f)
		}
	}
	return out
}()

// AddScores adds the record's paid-reward scores (m is the matrix st was
// measured from, over all its rollouts) to Scores, for the intervals of the
// means; a record that is not measured adds nothing.
func (g *Aggregate) AddScores(id string, m *Matrix, st *RecordStats) {
	if st.Unmeasured != Measured {
		return
	}
	if g.Scores == nil {
		g.Scores = NewBoot(2+len(PaidFigures), nil)
		g.buf = make([][]float64, 2+len(PaidFigures))
	}
	pos := allPositions(m.Rollouts())
	v := SourceVersion(m)
	series := make([][]float64, len(g.buf))
	done := map[Figure]int{} // figure scored -> the buffer holding its scores
	for k, f := range append([]Figure{{Scheme: RubricScore, WithAnswer: true}, {Scheme: RubricScore}}, PaidFigures...) {
		same := Same(m, v, f)
		j, ok := done[same]
		if !ok {
			j = k
			done[same] = k
			sc, scored := g.scorer.Scores(g.buf[k][:0], m, v, same, pos, nil)
			if !scored { // the rubric pays nothing without its ANSWER items: every rollout alike
				sc = append(sc[:0], make([]float64, len(pos))...)
			}
			g.buf[k] = sc
		}
		switch {
		case k == 0 && !st.HasAUROC, k == 1 && !st.HasAUROCNoAnswer:
		default:
			series[k] = g.buf[j]
		}
	}
	g.Scores.Add(RecordSeed(id), NewSample(m, pos, nil), series)
}

// NewAggregate is an empty aggregate.
func NewAggregate() *Aggregate {
	return &Aggregate{
		ByType:        map[string]*Counts{},
		Edges:         Histogram{Lo: -1, Hi: 1},
		AUROC:         Histogram{Lo: 0, Hi: 1},
		AUROCNoAnswer: Histogram{Lo: 0, Hi: 1},
	}
}

// Add folds in the measurement of record id.
func (g *Aggregate) Add(id string, st *RecordStats) {
	g.Records++
	if n := int64(len(st.NearDuplicates)); n > 0 {
		g.TextPairsAll += n
		g.TextRecordsAll++
	}
	if st.Unmeasured != Measured {
		g.Unmeasured[st.Unmeasured]++
		return
	}
	g.Measured++
	var rec Counts
	for i := range st.Items {
		s := &st.Items[i]
		rec.addItem(s)
		g.typeCounts(s.Type).addItem(s)
		g.Edges.Add(s.Edge)
	}
	any := rec.any()
	g.RecordsWith.merge(&any)
	g.RedundantPairs += int64(len(st.Redundant))
	g.NearDuplicatePairs += int64(len(st.NearDuplicates))
	if !st.HasAUROC || !st.HasAUROCNoAnswer {
		g.NoAUROC += b2i(!st.HasAUROC)
		g.NoAUROCNoAnswer += b2i(!st.HasAUROCNoAnswer)
		if len(g.NoAUROCIDs) < LowestKept {
			g.NoAUROCIDs = append(g.NoAUROCIDs, id)
		}
	}
	if st.HasAUROC {
		g.AUROC.Add(st.AUROC)
		g.AUROCSum += st.AUROC
		g.AUROCN++
		g.keepLow(Low{ID: id, AUROC: st.AUROC, Correct: st.Correct, Flawed: st.Flawed})
	}
	if st.HasAUROCNoAnswer {
		g.AUROCNoAnswer.Add(st.AUROCNoAnswer)
		g.AUROCNoAnswerSum += st.AUROCNoAnswer
		g.AUROCNoAnswerN++
	}
}

func (g *Aggregate) typeCounts(t string) *Counts {
	c := g.ByType[t]
	if c == nil {
		c = &Counts{}
		g.ByType[t] = c
	}
	return c
}

func lowOrder(a, b Low) int {
	if c := cmp.Compare(a.AUROC, b.AUROC); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

func (g *Aggregate) keepLow(l Low) {
	if len(g.Lowest) == LowestKept && lowOrder(l, g.Lowest[LowestKept-1]) >= 0 {
		return
	}
	k, _ := slices.BinarySearchFunc(g.Lowest, l, lowOrder)
	g.Lowest = slices.Insert(g.Lowest, k, l)
	if len(g.Lowest) > LowestKept {
		g.Lowest = g.Lowest[:LowestKept]
	}
}

// Merge folds o into g. Merging the same aggregates in the same order
// gives the same sums to the last bit.
func (g *Aggregate) Merge(o *Aggregate) {
	g.Records += o.Records
	g.Measured += o.Measured
	for k := range g.Unmeasured {
		g.Unmeasured[k] += o.Unmeasured[k]
	}
	for t, c := range o.ByType {
		g.typeCounts(t).merge(c)
	}
	g.RecordsWith.merge(&o.RecordsWith)
	g.RedundantPairs += o.RedundantPairs
	g.NearDuplicatePairs += o.NearDuplicatePairs
	g.TextPairsAll += o.TextPairsAll
	g.TextRecordsAll += o.TextRecordsAll
	g.Edges.merge(&o.Edges)
	g.AUROC.merge(&o.AUROC)
	g.AUROCNoAnswer.merge(&o.AUROCNoAnswer)
	g.AUROCSum += o.AUROCSum
	g.AUROCN += o.AUROCN
	g.AUROCNoAnswerSum += o.AUROCNoAnswerSum
	g.AUROCNoAnswerN += o.AUROCNoAnswerN
	for _, l := range o.Lowest {
		g.keepLow(l)
	}
	g.NoAUROC += o.NoAUROC
	g.NoAUROCNoAnswer += o.NoAUROCNoAnswer
	for _, id := range o.NoAUROCIDs {
		if len(g.NoAUROCIDs) < LowestKept {
			g.NoAUROCIDs = append(g.NoAUROCIDs, id)
		}
	}
	switch {
	case o.Scores == nil:
	case g.Scores == nil:
		g.Scores = NewBoot(2+len(PaidFigures), nil)
		g.Scores.Merge(o.Scores)
	default:
		g.Scores.Merge(o.Scores)
	}
}

// MeanAUROC is the mean rubric AUROC over the measured records (with or
// without ANSWER items); ok is false when no record has one.
func (g *Aggregate) MeanAUROC(withAnswer bool) (mean float64, ok bool) {
	sum, n := g.AUROCSum, g.AUROCN
	if !withAnswer {
		sum, n = g.AUROCNoAnswerSum, g.AUROCNoAnswerN
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// Total is the counts over every item type.
func (g *Aggregate) Total() Counts {
	var t Counts
	for _, c := range g.ByType {
		t.merge(c)
	}
	return t
}

// AntiShare is the share of measured items that are anti-discriminative;
// ok is false when no item is measured.
func (g *Aggregate) AntiShare() (share float64, ok bool) {
	t := g.Total()
	if t.Items == 0 {
		return 0, false
	}
	return float64(t.Anti) / float64(t.Items), true
}

// Types lists the item types counted, schema's types first in their order,
// then any other in name order.
func (g *Aggregate) Types() []string {
	var out []string
	for _, t := range schema.ItemTypes {
		if g.ByType[t] != nil {
			out = append(out, t)
		}
	}
	var other []string
	for t := range g.ByType {
		if !slices.Contains(schema.ItemTypes, t) {
			other = append(other, t)
		}
	}
	slices.Sort(other)
	return append(out, other...)
}

// UnmeasuredTotal is the number of records added but not measured.
func (g *Aggregate) UnmeasuredTotal() int64 { return g.Records - g.Measured }
