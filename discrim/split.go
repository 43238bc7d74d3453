package discrim

import "slices"

// Split is the fixed fit / held-out split of a record's rollouts (positions
// in m): the correct rollouts in order of their index alternate fit,
// held-out, fit, ..., and the flawed ones likewise, each side starting
// with fit. A record with at least two correct and two flawed judged
// rollouts has both sides in both halves; the fit half is never the
// smaller. The split depends only on the rollouts' indexes and
// correctness, so a refinement and its later audit agree on it.
func Split(m *Matrix) (fit, held []int) {
	order := allPositions(m.Rollouts())
	slices.SortStableFunc(order, func(a, b int) int { return int(m.Index[a]) - int(m.Index[b]) })
	var nCorrect, nFlawed int
	for _, r := range order {
		k := &nFlawed
		if m.Correct[r] {
			k = &nCorrect
		}
		if *k%2 == 0 {
			fit = append(fit, r)
		} else {
			held = append(held, r)
		}
		*k++
	}
	return fit, held
}
