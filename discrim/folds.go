package discrim

import "slices"

// DefaultFolds is how many folds cross-fitting uses by default.
const DefaultFolds = 4

// Folds assigns the rollouts of m (by position) to k folds for
// cross-fitting: the correct rollouts in order of their index go to folds
// 0, 1, ..., k−1, 0, ...; the flawed ones likewise, each side starting at
// fold 0, so that the first folds hold both sides when a side has fewer
// than k rollouts. It depends only on the rollouts' indexes and
// correctness. k below 2 is taken as 2.
func Folds(m *Matrix, k int) []int32 {
	k = max(k, 2)
	order := allPositions(m.Rollouts())
	slices.SortStableFunc(order, func(a, b int) int { return int(m.Index[a]) - int(m.Index[b]) })
	out := make([]int32, m.Rollouts())
	var nCorrect, nFlawed int
	for _, r := range order {
		n := &nFlawed
		if m.Correct[r] {
			n = &nCorrect
		}
		out[r] = int32(*n % k)
		*n++
	}
	return out
}

// Without is every position of m's rollouts but those in fold g.
func Without(folds []int32, g int32) []int {
	var out []int
	for r, f := range folds {
		if f != g {
			out = append(out, r)
		}
	}
	return out
}
