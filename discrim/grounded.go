package discrim

// GroundedEdge is a grounded criterion's edge: its mean score on answers
// written with the passage (open book) minus its mean score on answers
// written without it (closed book), over the criterion's weight, so it is
// comparable to a math item's edge (from −1 to 1 when the scores run from 0
// to the weight). ok is false when either side has no score or the weight
// is not positive. Sampling the two kinds of answers is the empirical
// stage's job.
func GroundedEdge(open, closed []float64, weight float64) (edge float64, ok bool) {
	if len(open) == 0 || len(closed) == 0 || !(weight > 0) {
		return 0, false
	}
	return (mean(open) - mean(closed)) / weight, true
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
