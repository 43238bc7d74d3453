package discrim

import (
	"math"
	"slices"
	"unicode"
	"unicode/utf8"
)

// redundantPairs lists the item pairs that move together within the
// labels: their within-label correlation (WithinPhi) is at least what two
// wordings of one criterion keep under the judge's errors,
// RedundantCorr·(1 − 2·eps)², and their association within the labels is
// beyond chance (StratifiedAssociationP, adjusted by Benjamini-Hochberg
// over the record's pairs, at most RedundantAlpha). Two items that each
// follow correctness, or that move against each other, are not redundant.
func redundantPairs(m *Matrix, rollouts []int, eps float64) []Pair {
	type tested struct {
		p    Pair
		pval float64
	}
	var ts []tested
	for a := range m.Items {
		for b := a + 1; b < len(m.Items); b++ {
			r := WithinPhi(m, rollouts, a, b)
			if math.IsNaN(r) {
				continue
			}
			ts = append(ts, tested{Pair{A: a, B: b, Equal: equalVectors(m, rollouts, a, b), Corr: r}, StratifiedAssociationP(m, rollouts, a, b)})
		}
	}
	ps := make([]float64, len(ts))
	for i, t := range ts {
		ps[i] = t.pval
	}
	adj := BenjaminiHochberg(ps)
	floor := RedundantCorr * (1 - 2*eps) * (1 - 2*eps)
	var out []Pair
	for i, t := range ts {
		if adj[i] <= RedundantAlpha && t.p.Corr >= floor-1e-12 {
			out = append(out, t.p)
		}
	}
	return out
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
func nearDuplicates(items []Item) []Pair {
	if len(items) < 2 {
		return nil
	}
	var buf []uint64
	ends := make([]int, len(items)+1)
	for i := range items {
		buf = appendShingles(buf, items[i].Text)
		ends[i+1] = len(buf)
	}
	set := func(i int) []uint64 { return buf[ends[i]:ends[i+1]] }
	var out []Pair
	for a := range items {
		for b := a + 1; b < len(items); b++ {
			if j, ok := jaccard(set(a), set(b)); ok && j >= DuplicateJaccard {
				out = append(out, Pair{A: a, B: b, Corr: j})
			}
		}
	}
	return out
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
