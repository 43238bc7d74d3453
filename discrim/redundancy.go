package discrim

import (
	"math"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Redundancy's thresholds (see redundantPairs).
const (
	// AlikeJaccard is the word-bigram Jaccard similarity at or above
	// which two items' texts are worded alike.
	AlikeJaccard = 0.5
	// AlikeCorr is the within-label correlation, before the judge's
	// errors, at or above which two items worded alike are redundant.
	AlikeCorr = 0.5
)

// redundantPairs lists the item pairs that say the same thing, by their
// verdicts within the labels and their texts. Only items that are not
// dead, saturated or anti-discriminative are paired (their own figures,
// which depend only on the labels' margins). A pair worded alike (texts at
// least AlikeJaccard similar) is redundant when its within-label
// correlation (WithinPhi) is at least AlikeCorr·(1 − 2·eps)²: the texts say
// the two are about one thing, and the verdicts agree as closely as two
// gradings of it by a judge wrong at rate eps do. Any other pair needs the
// verdicts alone to show it: a within-label correlation of at least
// RedundantCorr·(1 − 2·eps)² and an association within the labels beyond
// chance (StratifiedAssociationP) under multiple-comparison control:
// Benjamini-Hochberg at RedundantAlpha over the record's pairs that could
// reach significance at all (Tarone's exclusion of the pairs whose margins
// cannot give a p below RedundantAlpha/K). Two items that each follow
// correctness, or that move against each other, are never redundant.
func redundantPairs(m *Matrix, rollouts []int, eps float64, items []ItemStats) []Pair {
	sims := m.textSims()
	n := len(m.Items)
	attenuation := (1 - 2*eps) * (1 - 2*eps)
	var out []Pair
	var tested []Pair
	var ps, mins []float64
	for a := range n {
		if dropped(&items[a]) {
			continue
		}
		for b := a + 1; b < n; b++ {
			if dropped(&items[b]) {
				continue
			}
			r := WithinPhi(m, rollouts, a, b)
			if math.IsNaN(r) {
				continue
			}
			p := Pair{A: a, B: b, Equal: equalVectors(m, rollouts, a, b), Corr: r}
			if sims[a*n+b] >= AlikeJaccard {
				if r >= AlikeCorr*attenuation-1e-12 {
					out = append(out, p)
				}
				continue
			}
			// Only a pair correlated enough can be redundant: the others
			// stay in the family with p taken as 1 (which makes the
			// procedure only stricter) and their p is never computed.
			pval, pmin := 1.0, -1.0 // pmin computed when some pair needs the family
			if r >= RedundantCorr*attenuation-1e-12 {
				pval, pmin = stratifiedAssociation(m, rollouts, a, b)
			}
			tested, ps, mins = append(tested, p), append(ps, pval), append(mins, pmin)
		}
	}
	if !slices.ContainsFunc(tested, func(p Pair) bool { return p.Corr >= RedundantCorr*attenuation-1e-12 }) {
		return sortPairs(out) // no pair worded apart is correlated enough to count
	}
	for i, p := range tested {
		if mins[i] < 0 { // not computed yet
			mins[i] = minAssociationP(m, rollouts, p.A, p.B)
		}
	}
	k := float64(taroneK(mins, RedundantAlpha))
	var fam []int
	var famP []float64
	for i := range tested {
		if mins[i] <= RedundantAlpha/k {
			fam, famP = append(fam, i), append(famP, ps[i])
		}
	}
	for j, q := range BenjaminiHochberg(famP) {
		if p := tested[fam[j]]; q <= RedundantAlpha && p.Corr >= RedundantCorr*attenuation-1e-12 {
			out = append(out, p)
		}
	}
	return sortPairs(out)
}

// sortPairs orders pairs by their first item, then their second.
func sortPairs(out []Pair) []Pair {
	slices.SortFunc(out, func(a, b Pair) int {
		if a.A != b.A {
			return a.A - b.A
		}
		return a.B - b.B
	})
	return out
}

// dropped reports whether an item is dead, saturated or
// anti-discriminative by its own figures.
func dropped(s *ItemStats) bool { return s.Dead || s.Saturated || s.Anti }

// taroneK is Tarone's K for tests whose smallest attainable p-values are
// mins: the least K ≥ 1 with at most K of them at or below alpha/K. Tests
// that cannot reach alpha/K are left out of the family.
func taroneK(mins []float64, alpha float64) int {
	for k := 1; ; k++ {
		n := 0
		for _, p := range mins {
			if p <= alpha/float64(k) {
				n++
			}
		}
		if n <= k {
			return k
		}
	}
}

func equalVectors(m *Matrix, rollouts []int, a, b int) bool {
	for _, r := range rollouts {
		if m.X(r, a) != m.X(r, b) {
			return false
		}
	}
	return true
}

// Phi is the Pearson correlation of two 0/1 vectors of length n with na
// and nb ones, nab of them in the same places; NaN when either vector is
// constant.
func Phi(n, na, nb, nab int) float64 {
	if na == 0 || na == n || nb == 0 || nb == n {
		return math.NaN()
	}
	num := float64(n)*float64(nab) - float64(na)*float64(nb)
	den := math.Sqrt(float64(na) * float64(n-na) * float64(nb) * float64(n-nb))
	return num / den
}

// nearDuplicates lists the item pairs whose texts have a word-bigram
// Jaccard similarity ≥ DuplicateJaccard. The items' shingle sets share one
// backing array.
func nearDuplicates(m *Matrix) []Pair {
	sims := m.textSims()
	n := len(m.Items)
	var out []Pair
	for a := range n {
		for b := a + 1; b < n; b++ {
			if j := sims[a*n+b]; j >= DuplicateJaccard {
				out = append(out, Pair{A: a, B: b, Corr: j})
			}
		}
	}
	return out
}

// textSims are the word-bigram Jaccard similarities of every two items'
// texts (sims[a·n+b]; 0 when either has no word), computed once per
// matrix.
func (m *Matrix) textSims() []float64 {
	n := len(m.Items)
	if m.sims != nil && len(m.sims) == n*n {
		return m.sims
	}
	var buf []uint64
	ends := make([]int, n+1)
	for i := range m.Items {
		buf = appendShingles(buf, m.Items[i].Text)
		ends[i+1] = len(buf)
	}
	set := func(i int) []uint64 { return buf[ends[i]:ends[i+1]] }
	m.sims = make([]float64, n*n)
	for a := range n {
		for b := a + 1; b < n; b++ {
			if j, ok := jaccard(set(a), set(b)); ok {
				m.sims[a*n+b], m.sims[b*n+a] = j, j
			}
		}
	}
	return m.sims
}

// TextSimilarity is the word-bigram Jaccard similarity of two texts; ok is
// false when either has no word.
func TextSimilarity(a, b string) (sim float64, ok bool) {
	return jaccard(Shingles(a), Shingles(b))
}

// Shingles is the sorted set of hashed word bigrams of text: words are
// runs of letters and digits, lower-cased; a text of one word gives that
// word alone.
func Shingles(text string) []uint64 { return appendShingles(nil, text) }

// appendShingles appends text's shingle set to dst.
func appendShingles(dst []uint64, text string) []uint64 {
	start := len(dst)
	var prev, cur uint64
	words, inWord := 0, false
	add := func(r rune, letter bool) {
		switch {
		case letter && !inWord:
			cur, inWord = (fnvOffset^uint64(r))*fnvPrime, true
		case letter:
			cur = (cur ^ uint64(r)) * fnvPrime
		case inWord:
			if words > 0 {
				dst = append(dst, pairHash(prev, cur))
			}
			prev, words, inWord = cur, words+1, false
		}
	}
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf { // ASCII: no decoding, no tables
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			add(rune(c), 'a' <= c && c <= 'z' || '0' <= c && c <= '9')
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		add(unicode.ToLower(r), unicode.IsLetter(r) || unicode.IsDigit(r))
		i += size
	}
	add(' ', false)
	if words == 1 {
		return append(dst, pairHash(prev, 0))
	}
	set := dst[start:]
	slices.Sort(set)
	return dst[:start+len(slices.Compact(set))]
}

// FNV-1a's 64-bit constants, for hashing words rune by rune.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// pairHash mixes two word hashes into one bigram hash (order matters).
func pairHash(a, b uint64) uint64 {
	h := (fnvOffset ^ a) * fnvPrime
	h = (h ^ (b + 0x9e3779b97f4a7c15)) * fnvPrime
	return h ^ h>>29
}

// jaccard is |a ∩ b| / |a ∪ b| of two sorted sets.
func jaccard(a, b []uint64) (float64, bool) {
	if len(a) == 0 || len(b) == 0 {
		return 0, false
	}
	inter, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter), true
}
