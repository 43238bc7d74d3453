package judgestats

import "math"

// PanelErrors estimates each judge's error rate from how often the judges
// of a panel disagree, pairwise: disagree[i][j] is the share of the
// questions both judges i and j answered on which they differ. With each
// judge wrong independently at e_i, two judges differ at d_ij = e_i + e_j −
// 2·e_i·e_j, that is 1 − 2·d_ij = c_i·c_j with c_i = 1 − 2·e_i; so with
// three or more judges c_i² = c_i·c_j · c_i·c_k / (c_j·c_k), taken as the
// geometric mean over every pair j, k of the other judges, and with two
// the disagreement is split evenly (c_1 = c_2). Rates are clipped to [0,
// 0.5]. ok is false for fewer than two judges, or when the judges agree no
// better than chance on a pair it needs.
func PanelErrors(disagree [][]float64) (e []float64, ok bool) {
	n := len(disagree)
	if n < 2 {
		return nil, false
	}
	a := func(i, j int) float64 { return 1 - 2*disagree[i][j] }
	e = make([]float64, n)
	for i := range n {
		var logc2 float64
		terms := 0
		for j := range n {
			for k := j + 1; k < n; k++ {
				if j == i || k == i {
					continue
				}
				x, y, z := a(i, j), a(i, k), a(j, k)
				if !(x > 0 && y > 0 && z > 0) {
					return nil, false
				}
				logc2 += math.Log(x * y / z)
				terms++
			}
		}
		if n == 2 {
			x := a(0, 1)
			if !(x > 0) {
				return nil, false
			}
			logc2, terms = math.Log(x), 1
		}
		c := math.Sqrt(math.Exp(logc2 / float64(terms)))
		e[i] = min(max((1-c)/2, 0), 0.5)
	}
	return e, true
}

// MajorityError is how often a panel's verdict is wrong when its judges
// err independently at rates e and it takes their strict majority (a tie
// counts against, so it is wrong on half the questions a tie can hit):
// P(more than half wrong) + ½·P(exactly half wrong).
func MajorityError(e []float64) float64 {
	dist := []float64{1} // P(k judges wrong)
	for _, p := range e {
		next := make([]float64, len(dist)+1)
		for k, q := range dist {
			next[k] += q * (1 - p)
			next[k+1] += q * p
		}
		dist = next
	}
	n := len(e)
	out := 0.0
	for k, q := range dist {
		switch {
		case 2*k > n:
			out += q
		case 2*k == n:
			out += q / 2
		}
	}
	return out
}
