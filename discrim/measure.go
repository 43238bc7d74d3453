package discrim

import (
	"math"

	"github.com/rubricforge/rubricforge/schema"
)

// Thresholds of the definitions (see the package comment).
const (
	// DefaultAntiAlpha is the one-sided Fisher p at or below which a
	// negative edge counts as anti-discriminative.
	DefaultAntiAlpha = 0.05
	// SaturatedShare is the share of rollouts with x = 1 at or above which
	// an item is Saturated95.
	SaturatedShare = 0.95
	// RedundantCorr is the correlation of two items' x vectors at or above
	// which they are a redundant pair.
	RedundantCorr = 0.9
	// DuplicateJaccard is the word-bigram Jaccard similarity at or above
	// which two item texts are near duplicates.
	DuplicateJaccard = 0.8
)

// Options tune a measurement; the zero value takes the defaults.
type Options struct {
	// AntiAlpha replaces DefaultAntiAlpha when positive.
	AntiAlpha float64
	// DecisionsOnly measures what a refinement decides by: no
	// near-duplicate texts (RecordStats.NearDuplicates stays empty) and no
	// rubric AUROC (HasAUROC stays false), which a caller measuring the
	// same items on many subsets needs once, if at all.
	DecisionsOnly bool
	// JudgeError is the satisfaction judge's measured verdict error rate
	// (a panel's, or against people's labels) that the definitions of
	// dead, saturated and redundant tolerate: 0 takes DefaultJudgeError, a
	// negative rate none (the exact definitions).
	JudgeError float64
}

func (o Options) antiAlpha() float64 {
	if o.AntiAlpha > 0 {
		return o.AntiAlpha
	}
	return DefaultAntiAlpha
}

// Reason says why a record's edges and AUROC are not measured.
type Reason int

// Reasons a record is unmeasured. Measured is the zero value.
const (
	Measured    Reason = iota
	NoItems            // the rubric is empty
	NoVerdicts         // no rollout has verdicts matching the rubric
	OnlyCorrect        // the measured rollouts are all correct
	OnlyFlawed         // the measured rollouts are all flawed
	nReasons
)

// Reasons lists the unmeasured reasons in report order.
var Reasons = []Reason{NoItems, NoVerdicts, OnlyCorrect, OnlyFlawed}

// String is the reason's report key.
func (r Reason) String() string {
	switch r {
	case Measured:
		return "measured"
	case NoItems:
		return "no_items"
	case NoVerdicts:
		return "no_verdicts"
	case OnlyCorrect:
		return "only_correct"
	case OnlyFlawed:
		return "only_flawed"
	}
	return "unknown"
}

// ItemStats is one item measured over a set of rollouts.
type ItemStats struct {
	ID   int32
	Type string
	// Good counts the measured rollouts with x = 1; GoodCorrect and
	// GoodFlawed split it by correctness.
	Good, GoodCorrect, GoodFlawed int
	// HasEdge is true when the rollouts hold both sides; the means, Edge,
	// AntiP and Anti are zero otherwise.
	HasEdge                 bool
	MeanCorrect, MeanFlawed float64
	Edge                    float64
	// AntiP is the one-sided Fisher p that correct rollouts hold this few
	// x = 1 by chance; Anti is Edge < 0 with AntiP, adjusted by
	// Benjamini-Hochberg over the record's items, ≤ the alpha.
	AntiP float64
	Anti  bool
	// Saturated: x = 0 on no more rollouts of each side (correct,
	// flawed) than judge errors explain (FlipsExplain at the judge error
	// rate; with none, x = 1 on every rollout); Dead likewise with x = 1.
	// Saturated95: Saturated, or x = 1 on ≥ 95% of the rollouts.
	Saturated, Saturated95, Dead bool
	// Redundant and NearDuplicate are true when the item is in at least one
	// pair of the kind.
	Redundant, NearDuplicate bool
}

// Pair names two items of a record (A < B by position) that are redundant
// or near duplicates.
type Pair struct {
	A, B int // positions in the rubric
	// Equal is true when the x vectors are the same; Corr is their
	// correlation, NaN when either is constant. For a text pair Corr is the
	// Jaccard similarity.
	Equal bool
	Corr  float64
}

// RecordStats is one record measured over a set of its rollouts.
type RecordStats struct {
	// Unmeasured is why the record has no edges and no AUROC (Measured
	// when it has them).
	Unmeasured      Reason
	Correct, Flawed int // measured rollouts by side
	Items           []ItemStats
	// AUROC is the rubric AUROC over all items; AUROCNoAnswer without the
	// ANSWER items. HasAUROC / HasAUROCNoAnswer are false when undefined
	// (the record is unmeasured, or the items' weights sum to 0, or no
	// item but ANSWER ones is left).
	AUROC, AUROCNoAnswer       float64
	HasAUROC, HasAUROCNoAnswer bool
	// Redundant lists the redundant pairs over the verdicts;
	// NearDuplicates the pairs of near-duplicate texts.
	Redundant, NearDuplicates []Pair
}

// Measure measures m over the rollouts at the given positions (nil: all of
// them). Saturation, deadness and redundancy need only verdicts; edges,
// anti-discrimination and the AUROC need both sides. Near-duplicate texts
// need neither.
func Measure(m *Matrix, rollouts []int, opt Options) RecordStats {
	if rollouts == nil {
		rollouts = allPositions(m.Rollouts())
	}
	var st RecordStats
	st.Items = make([]ItemStats, len(m.Items))
	for i, it := range m.Items {
		st.Items[i] = ItemStats{ID: it.ID, Type: it.Type}
	}
	if !opt.DecisionsOnly {
		st.NearDuplicates = nearDuplicates(m)
	}
	for _, p := range st.NearDuplicates {
		st.Items[p.A].NearDuplicate, st.Items[p.B].NearDuplicate = true, true
	}
	for _, r := range rollouts {
		if m.Correct[r] {
			st.Correct++
		} else {
			st.Flawed++
		}
	}
	st.Unmeasured = reasonOf(len(m.Items), st.Correct, st.Flawed)
	if len(m.Items) == 0 || len(rollouts) == 0 {
		return st
	}
	eps := opt.judgeError()
	flips := [2]int{FlipsExplain(st.Flawed, eps), FlipsExplain(st.Correct, eps)}
	for i := range m.Items {
		measureItem(&st.Items[i], m, i, rollouts, st.Correct, st.Flawed, flips)
	}
	markAnti(st.Items, opt.antiAlpha())
	st.Redundant = redundantPairs(m, rollouts, opt.judgeError(), st.Items)
	for _, p := range st.Redundant {
		st.Items[p.A].Redundant, st.Items[p.B].Redundant = true, true
	}
	if st.Unmeasured == Measured && !opt.DecisionsOnly {
		st.AUROC, st.HasAUROC = RubricAUROC(m, rollouts, true)
		st.AUROCNoAnswer, st.HasAUROCNoAnswer = RubricAUROC(m, rollouts, false)
	}
	return st
}

func reasonOf(items, correct, flawed int) Reason {
	switch {
	case items == 0:
		return NoItems
	case correct+flawed == 0:
		return NoVerdicts
	case flawed == 0:
		return OnlyCorrect
	case correct == 0:
		return OnlyFlawed
	}
	return Measured
}

func allPositions(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func measureItem(s *ItemStats, m *Matrix, i int, rollouts []int, nCorrect, nFlawed int, flips [2]int) {
	for _, r := range rollouts {
		if !m.X(r, i) {
			continue
		}
		s.Good++
		if m.Correct[r] {
			s.GoodCorrect++
		} else {
			s.GoodFlawed++
		}
	}
	n := len(rollouts)
	s.Saturated, s.Dead = saturatedOrDead([2]int{s.GoodFlawed, s.GoodCorrect}, [2]int{nFlawed, nCorrect}, flips)
	s.Saturated95 = s.Saturated || float64(s.Good) >= SaturatedShare*float64(n)
	if nCorrect == 0 || nFlawed == 0 {
		return
	}
	s.HasEdge = true
	s.MeanCorrect = float64(s.GoodCorrect) / float64(nCorrect)
	s.MeanFlawed = float64(s.GoodFlawed) / float64(nFlawed)
	s.Edge = s.MeanCorrect - s.MeanFlawed
	s.AntiP = FisherLess(s.GoodCorrect, nCorrect, s.GoodFlawed, nFlawed)
}

// saturatedOrDead: an item good on good[k] of the n[k] rollouts of each
// side (flawed, correct) is saturated when judge errors explain its x = 0
// on both sides (at most flips[k] of them), dead when they explain its
// x = 1; where they explain both on every side (so few rollouts), it is
// the one its count is nearer, neither on a tie.
func saturatedOrDead(good, n, flips [2]int) (saturated, dead bool) {
	saturated, dead = true, true
	for k := range 2 {
		saturated = saturated && n[k]-good[k] <= flips[k]
		dead = dead && good[k] <= flips[k]
	}
	g, total := good[0]+good[1], n[0]+n[1]
	if saturated && dead {
		return 2*g > total, 2*g < total
	}
	return saturated && total > 0, dead && total > 0
}

// markAnti sets Anti on the items whose edge is negative and whose Fisher
// p, adjusted by Benjamini-Hochberg over the record's items with an edge,
// is at most alpha.
func markAnti(items []ItemStats, alpha float64) {
	var ps []float64
	for i := range items {
		if items[i].HasEdge {
			ps = append(ps, items[i].AntiP)
		}
	}
	adj := BenjaminiHochberg(ps)
	k := 0
	for i := range items {
		if items[i].HasEdge {
			items[i].Anti = items[i].Edge < 0 && adj[k] <= alpha
			k++
		}
	}
}

// FisherLess is the one-sided Fisher exact p of a 2 × 2 table: with
// nCorrect correct rollouts of which goodCorrect have x = 1, and nFlawed
// flawed of which goodFlawed do, the probability, when x does not depend
// on correctness and both margins are fixed, that the correct rollouts
// hold goodCorrect or fewer x = 1 (hypergeometric lower tail).
func FisherLess(goodCorrect, nCorrect, goodFlawed, nFlawed int) float64 {
	n := nCorrect + nFlawed
	k := goodCorrect + goodFlawed
	lo := max(0, k-nFlawed)
	denom := logChoose(n, nCorrect)
	p := 0.0
	for j := lo; j <= goodCorrect; j++ {
		p += math.Exp(logChoose(k, j) + logChoose(n-k, nCorrect-j) - denom)
	}
	return min(p, 1)
}

func logChoose(n, k int) float64 {
	return logFactorial(n) - logFactorial(k) - logFactorial(n-k)
}

// logFactorials holds ln(n!) for n below its length, computed once: the
// tests' counts are rollouts of one record.
var logFactorials = func() []float64 {
	out := make([]float64, 1025)
	for n := 1; n < len(out); n++ {
		out[n] = out[n-1] + math.Log(float64(n))
	}
	return out
}()

func logFactorial(n int) float64 {
	if n < len(logFactorials) {
		return logFactorials[n]
	}
	lg, _ := math.Lgamma(float64(n + 1))
	return lg
}

// RubricAUROC is the rubric AUROC over the rollouts at the given positions,
// with or without the ANSWER items; ok is false when it is undefined (one
// side missing, or the weights counted sum to 0).
func RubricAUROC(m *Matrix, rollouts []int, withAnswer bool) (auroc float64, ok bool) {
	weights := make([]float64, len(m.Items))
	for i, it := range m.Items {
		if withAnswer || it.Type != schema.TypeAnswer {
			weights[i] = it.Weight
		}
	}
	return AUROCWith(m, rollouts, weights)
}

// AUROCWith is the rubric AUROC over the rollouts at the given positions
// when item i weighs weights[i] instead of its own weight (0 leaves it
// out): how a refinement's new weights rank held-out rollouts. ok is false
// when one side is missing or the weights sum to 0.
func AUROCWith(m *Matrix, rollouts []int, weights []float64) (auroc float64, ok bool) {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	if !(total > 0) || len(weights) != len(m.Items) {
		return 0, false
	}
	var correct, flawed []float64
	for _, r := range rollouts {
		s := rubricScore(m, r, weights, total)
		if m.Correct[r] {
			correct = append(correct, s)
		} else {
			flawed = append(flawed, s)
		}
	}
	return AUROC(correct, flawed)
}

// rubricScore is Σ_i w_i x_ir / Σ_i w_i, summed in item order so equal
// sets of satisfied items give equal scores.
func rubricScore(m *Matrix, r int, weights []float64, total float64) float64 {
	got := 0.0
	for i, w := range weights {
		if w != 0 && m.X(r, i) {
			got += w
		}
	}
	return got / total
}

// tieTolerance is how close two scores count as a tie: scores are sums of
// the same weights in different sets, equal as numbers but not always as
// floats.
const tieTolerance = 1e-12

// AUROC is P(a > b) + ½ P(a = b) over all pairs of a from pos and b from
// neg; ok is false when either is empty.
func AUROC(pos, neg []float64) (auroc float64, ok bool) {
	if len(pos) == 0 || len(neg) == 0 {
		return 0, false
	}
	wins := 0 // in halves: 2 per win, 1 per tie
	for _, a := range pos {
		for _, b := range neg {
			switch {
			case math.Abs(a-b) <= tieTolerance:
				wins++
			case a > b:
				wins += 2
			}
		}
	}
	return float64(wins) / float64(2*len(pos)*len(neg)), true
}
