package judgestats

import "math"

// PairedDifference estimates the difference of two matched proportions:
// over n pairs, b are a success only in the first of the pair and c only
// in the second (the discordant pairs), so the difference of the two
// success rates is (b - c)/n. It returns the Agresti-Min estimate and its
// interval at normal quantile z (Agresti and Min 2005: half a pair added
// to each of the four cells, n + 2 pairs, then the Wald interval), which
// keeps a sensible width when there are few or no discordant pairs, where
// the plain Wald interval shrinks to a point. The interval lies within
// [-1, 1] (Interval's bounds hold a difference here, not a rate). ok is
// false when n is 0 or b + c exceeds n.
func PairedDifference(b, c, n int64, z float64) (est float64, iv Interval, ok bool) {
	if n <= 0 || b < 0 || c < 0 || b+c > n {
		return 0, Interval{}, false
	}
	m := float64(n) + 2
	pb, pc := (float64(b)+0.5)/m, (float64(c)+0.5)/m
	est = pb - pc
	half := z * math.Sqrt((pb+pc-est*est)/m)
	return est, Interval{Low: math.Max(-1, est-half), High: math.Min(1, est+half)}, true
}
