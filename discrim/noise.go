package discrim

import (
	"math"
	"slices"
)

// DefaultJudgeError is the satisfaction judge's verdict error rate the
// definitions tolerate when no measured rate is given (Options.JudgeError):
// the chance that one verdict is the opposite of the truth.
const DefaultJudgeError = 0.05

// FlipsTail is the tail probability of [FlipsExplain]: a count of x = 1 (or
// x = 0) that judge errors alone would exceed no more than this often is
// what they explain.
const FlipsTail = 0.1

// RedundantAlpha is the false-discovery rate at which a record's redundant
// pairs are called (Benjamini-Hochberg over the record's pairs).
const RedundantAlpha = 0.05

// judgeError is the rate the definitions tolerate: Options.JudgeError, 0
// taking DefaultJudgeError and a negative one meaning none (the exact
// definitions); at most 0.5.
func (o Options) judgeError() float64 {
	switch {
	case o.JudgeError < 0:
		return 0
	case o.JudgeError == 0:
		return DefaultJudgeError
	}
	return min(o.JudgeError, 0.5)
}

// JudgeErrorOf is the rate o's definitions tolerate (see Options.JudgeError).
func (o Options) JudgeErrorOf() float64 { return o.judgeError() }

// FlipsExplain is the most verdicts out of n that a judge wrong with
// probability eps on each, independently, gets wrong more often than
// FlipsTail: the smallest q with P(Binomial(n, eps) > q) ≤ FlipsTail. An
// item whose x = 1 on at most q of n rollouts is dead within the judge's
// error (x = 0 on at most q: saturated). 0 when eps is 0.
func FlipsExplain(n int, eps float64) int {
	if n <= 0 || !(eps > 0) {
		return 0
	}
	cdf := 0.0
	for q := 0; q < n; q++ {
		cdf += math.Exp(logChoose(n, q) + float64(q)*math.Log(eps) + float64(n-q)*math.Log1p(-eps))
		if 1-cdf <= FlipsTail {
			return q
		}
	}
	return n
}

// WithinPhi is the within-label correlation of items a and b over the
// rollouts at the given positions (nil: all): their good-side values
// centred on each label's own mean (correct, flawed), the deviations'
// covariance over the product of their spreads, pooled over both labels
// (RRD's within-label correlation). Two items that each follow correctness
// do not correlate within the labels; two wordings of one criterion do.
// NaN when either item is constant within both labels.
func WithinPhi(m *Matrix, rollouts []int, a, b int) float64 {
	var cov, va, vb float64
	for _, side := range [2]bool{true, false} {
		n, na, nb, nab := sideCounts(m, rollouts, a, b, side)
		if n == 0 {
			continue
		}
		fn := float64(n)
		cov += float64(nab) - float64(na)*float64(nb)/fn
		va += float64(na) - float64(na)*float64(na)/fn
		vb += float64(nb) - float64(nb)*float64(nb)/fn
	}
	if va <= 1e-12 || vb <= 1e-12 {
		return math.NaN()
	}
	return cov / math.Sqrt(va*vb)
}

// sideCounts counts, over the rollouts of one label, the rollouts, those
// with x = 1 on a, on b, and on both.
func sideCounts(m *Matrix, rollouts []int, a, b int, correct bool) (n, na, nb, nab int) {
	each := func(r int) {
		if m.Correct[r] != correct {
			return
		}
		xa, xb := m.X(r, a), m.X(r, b)
		n++
		na += b2int(xa)
		nb += b2int(xb)
		nab += b2int(xa && xb)
	}
	if rollouts == nil {
		for r := range m.Rollouts() {
			each(r)
		}
	} else {
		for _, r := range rollouts {
			each(r)
		}
	}
	return n, na, nb, nab
}

func b2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// StratifiedAssociationP is the exact one-sided p that items a and b agree
// on x = 1 as often as they do, or more, within the labels by chance: with
// each label's margins fixed (how many rollouts of it have x = 1 on a and
// on b), the count of rollouts with x = 1 on both is hypergeometric within
// each label; p is the upper tail of the sum over the two labels at the
// observed sum. 1 when no label can tell.
func StratifiedAssociationP(m *Matrix, rollouts []int, a, b int) float64 {
	p, _ := stratifiedAssociation(m, rollouts, a, b)
	return p
}

// stratifiedAssociation is StratifiedAssociationP and the smallest p the
// labels' margins allow (the sum at its largest).
func stratifiedAssociation(m *Matrix, rollouts []int, a, b int) (p, pmin float64) {
	var sides [2]hyper
	for k, side := range [2]bool{true, false} {
		sides[k] = hyperOf(sideCounts(m, rollouts, a, b, side))
	}
	return sides[0].upperSum(sides[1]), sides[0].at(sides[0].hi) * sides[1].at(sides[1].hi)
}

// minAssociationP is the smallest p StratifiedAssociationP could give
// items a and b with their labels' margins: cheap, for Tarone's family.
func minAssociationP(m *Matrix, rollouts []int, a, b int) float64 {
	pmin := 1.0
	for _, side := range [2]bool{true, false} {
		h := hyperOf(sideCounts(m, rollouts, a, b, side))
		pmin *= h.at(h.hi)
	}
	return pmin
}

// hyper is the hypergeometric distribution of the rollouts with x = 1 on
// both items within one label, its margins fixed; obs the observed count.
type hyper struct {
	n, na, nb, lo, hi, obs int
	denom                  float64
}

func hyperOf(n, na, nb, nab int) hyper {
	return hyper{n: n, na: na, nb: nb, lo: max(0, na+nb-n), hi: min(na, nb), obs: nab, denom: logChoose(n, nb)}
}

// at is the probability of k.
func (h hyper) at(k int) float64 {
	if k < h.lo || k > h.hi {
		return 0
	}
	return math.Exp(logChoose(h.na, k) + logChoose(h.n-h.na, h.nb-k) - h.denom)
}

// upperSum is P(X + Y ≥ h.obs + o.obs) for X of h and Y of o.
func (h hyper) upperSum(o hyper) float64 {
	target := h.obs + o.obs
	p := 0.0
	for x := h.lo; x <= h.hi; x++ {
		px := h.at(x)
		if px == 0 {
			continue
		}
		tail := 0.0
		for y := max(o.lo, target-x); y <= o.hi; y++ {
			tail += o.at(y)
		}
		p += px * tail
	}
	return min(p, 1)
}

// BenjaminiHochberg is the step-up adjustment of p-values for a false
// discovery rate: rank the k-th smallest of m, adjusted to
// min over j ≥ k of p_(j)·m/j (at most 1), in the input order. A test
// whose adjusted p is at most q is a discovery at rate q.
func BenjaminiHochberg(p []float64) []float64 {
	m := len(p)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, m)
	running := 1.0
	for k := m - 1; k >= 0; k-- {
		i := order[k]
		running = min(running, p[i]*float64(m)/float64(k+1))
		out[i] = running
	}
	return out
}

// ProbLower is the posterior probability, under uniform priors on both
// rates, that an item's good-side rate among correct rollouts is below its
// rate among flawed ones, given goodCorrect of nCorrect and goodFlawed of
// nFlawed: P(p_c < p_f) with p_c ~ Beta(1 + goodCorrect, 1 + nCorrect −
// goodCorrect) and p_f likewise (the exact sum for integer parameters). An
// edge decided by one rollout on a side stays near 1/2 however negative it
// is; an edge over many rollouts on both sides goes to 0 or 1.
func ProbLower(goodCorrect, nCorrect, goodFlawed, nFlawed int) float64 {
	aA, bA := float64(1+goodCorrect), float64(1+nCorrect-goodCorrect)
	aB, bB := 1+goodFlawed, float64(1+nFlawed-goodFlawed)
	lbA := logBeta(aA, bA)
	p := 0.0
	for i := range aB {
		fi := float64(i)
		p += math.Exp(logBeta(aA+fi, bA+bB) - math.Log(bB+fi) - logBeta(1+fi, bB) - lbA)
	}
	return min(max(p, 0), 1)
}

func logBeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}
