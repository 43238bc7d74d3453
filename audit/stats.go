package audit

import (
	"maps"
	"math"
	"slices"
)

// hist counts how many records have each integer value (items of a type,
// rollouts, ...); it gives exact means, medians and extremes.
type hist map[int]int64

func (h hist) add(v int) { h[v]++ }

func (h hist) merge(o hist) {
	for v, n := range o {
		h[v] += n
	}
}

func (h hist) n() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Summary describes a distribution of counts per record. Std is the
// population standard deviation, as the papers' tables give it.
type Summary struct {
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"`
	Median float64 `json:"median"`
	Min    int     `json:"min"`
	Max    int     `json:"max"`
}

func (h hist) summary() Summary {
	n := h.n()
	if n == 0 {
		return Summary{}
	}
	keys := slices.Sorted(maps.Keys(h))
	var sum, sq float64
	for _, v := range keys {
		sum += float64(v) * float64(h[v])
	}
	mean := sum / float64(n)
	for _, v := range keys {
		d := float64(v) - mean
		sq += d * d * float64(h[v])
	}
	return Summary{Mean: mean, Std: math.Sqrt(sq / float64(n)), Median: h.median(keys, n), Min: keys[0], Max: keys[len(keys)-1]}
}

// median of the sorted values of h: the middle one, or the mean of the two
// middle ones.
func (h hist) median(keys []int, n int64) float64 {
	at := func(i int64) int { // the i-th value (0-based) in sorted order
		for _, v := range keys {
			if i < h[v] {
				return v
			}
			i -= h[v]
		}
		return keys[len(keys)-1]
	}
	if n%2 == 1 {
		return float64(at(n / 2))
	}
	return (float64(at(n/2-1)) + float64(at(n/2))) / 2
}

// Bin is one bar of a histogram of integer values.
type Bin struct {
	Value   int   `json:"value"`
	Records int64 `json:"records"`
}

// bins lists h from its smallest to its largest value, zeros included.
func (h hist) bins() []Bin {
	if len(h) == 0 {
		return []Bin{}
	}
	keys := slices.Sorted(maps.Keys(h))
	out := make([]Bin, 0, keys[len(keys)-1]-keys[0]+1)
	for v := keys[0]; v <= keys[len(keys)-1]; v++ {
		out = append(out, Bin{v, h[v]})
	}
	return out
}

// Range is one bar of a histogram of real values: [Lo, Hi), the last closed.
type Range struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Count int64   `json:"count"`
}

// quantile of sorted xs by the nearest-rank method.
func quantile[T int32 | float64](xs []T, q float64) T {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// median of sorted xs: the middle one, or the mean of the two middle ones.
func median[T int32 | float64](xs []T) float64 {
	n := len(xs)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return float64(xs[n/2])
	}
	return (float64(xs[n/2-1]) + float64(xs[n/2])) / 2
}

// ratio is a / b, or nil when b is 0: a rate of nothing is not 0.
func ratio(a, b int64) *float64 {
	if b == 0 {
		return nil
	}
	r := float64(a) / float64(b)
	return &r
}

// counter counts records by a string value (style, split, model, ...).
type counter map[string]int64

func (c counter) merge(o counter) {
	for k, n := range o {
		c[k] += n
	}
}

// Count is the number of records with one value of a field.
type Count struct {
	Value   string `json:"value"`
	Records int64  `json:"records"`
}

// counts lists c by value.
func (c counter) counts() []Count {
	out := make([]Count, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		out = append(out, Count{k, c[k]})
	}
	return out
}

// niceStep is a round bin width (1, 2 or 5 times a power of ten) that cuts
// [0, hi] into at most n bins.
func niceStep(hi float64, n int) float64 {
	if hi <= 0 {
		return 1
	}
	raw := hi / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
