package discrim

import (
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"unicode"
)

// redundantPairs lists the item pairs whose x vectors over the rollouts are
// equal, or both non-constant with correlation ≥ RedundantCorr.
func redundantPairs(m *Matrix, rollouts []int) []Pair {
	var out []Pair
	for a := range m.Items {
		for b := a + 1; b < len(m.Items); b++ {
			if p, ok := redundant(m, rollouts, a, b); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func redundant(m *Matrix, rollouts []int, a, b int) (Pair, bool) {
	var na, nb, nab int
	equal := true
	for _, r := range rollouts {
		xa, xb := m.X(r, a), m.X(r, b)
		if xa {
			na++
		}
		if xb {
			nb++
		}
		if xa && xb {
			nab++
		}
		if xa != xb {
			equal = false
		}
	}
	corr := Phi(len(rollouts), na, nb, nab)
	p := Pair{A: a, B: b, Equal: equal, Corr: corr}
	return p, equal || corr >= RedundantCorr
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
// Jaccard similarity ≥ DuplicateJaccard.
func nearDuplicates(items []Item) []Pair {
	if len(items) < 2 {
		return nil
	}
	sh := make([][]uint64, len(items))
	for i := range items {
		sh[i] = Shingles(items[i].Text)
	}
	var out []Pair
	for a := range items {
		for b := a + 1; b < len(items); b++ {
			if j, ok := jaccard(sh[a], sh[b]); ok && j >= DuplicateJaccard {
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
func Shingles(text string) []uint64 {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 1 {
		return []uint64{hashWords(words[0], "")}
	}
	out := make([]uint64, 0, max(0, len(words)-1))
	for i := 0; i+1 < len(words); i++ {
		out = append(out, hashWords(words[i], words[i+1]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func hashWords(a, b string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(a))
	h.Write([]byte{0})
	h.Write([]byte(b))
	return h.Sum64()
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
