package pipeline

import "math"

// validity is an item's empirical validity over a group of rollouts.
type validity struct {
	satRate *float64
	corr    *float64 // nil when correctness or satisfaction is constant
	valid   *bool    // the RLCER rule; nil when correctness is constant
}

// itemValidity measures one item over rollouts: sat[i] is 1 when rollout i
// satisfies the item, correct[i] 1 when it is correct. The correlation is
// sign-aware: for a PITFALL (polarity -1) satisfying it counts against, so a
// good pitfall correlates positively. The item is valid when its satisfaction
// varies (std > 0) and corr > alpha (RLCER).
func itemValidity(sat, correct []float64, polarity int32, alpha float64) validity {
	var v validity
	if len(sat) == 0 {
		return v
	}
	rate := mean(sat)
	v.satRate = &rate
	sdC := stddev(correct)
	if sdC == 0 {
		return v
	}
	sdS := stddev(sat)
	valid := false
	if sdS > 0 {
		corr := max(-1, min(1, covariance(sat, correct)/(sdS*sdC)))
		if polarity < 0 {
			corr = -corr
		}
		v.corr = &corr
		valid = corr > alpha
	}
	v.valid = &valid
	return v
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func stddev(x []float64) float64 { return math.Sqrt(covariance(x, x)) }

// covariance is the population covariance of x and y (same length).
func covariance(x, y []float64) float64 {
	mx, my := mean(x), mean(y)
	s := 0.0
	for i := range x {
		s += (x[i] - mx) * (y[i] - my)
	}
	return s / float64(len(x))
}
