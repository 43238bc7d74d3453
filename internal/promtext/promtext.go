// Package promtext owns what rewardd writes in the Prometheus text
// exposition format and more than one package records: latency histograms
// with fixed buckets (the server's per endpoint, the judge's per verdict
// call) and the format of a sample's value.
package promtext

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// LatencyBuckets are the upper bounds, in seconds, of the latency histograms.
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Histogram is a Prometheus histogram with fixed buckets, safe for
// concurrent use.
type Histogram struct {
	bounds []float64
	counts []atomic.Int64 // per bucket, not cumulative; the last is +Inf
	sumMu  sync.Mutex
	sum    float64
	total  atomic.Int64
}

// NewHistogram returns an empty histogram with the buckets' upper bounds,
// in ascending order.
func NewHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]atomic.Int64, len(bounds)+1)}
}

// Observe counts one sample of value v.
func (h *Histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i].Add(1)
	h.total.Add(1)
	h.sumMu.Lock()
	h.sum += v
	h.sumMu.Unlock()
}

// Write writes the histogram's series, labels being `name="value"` pairs
// without braces (empty for none).
func (h *Histogram) Write(w io.Writer, name, labels string) {
	sep := ""
	if labels != "" {
		sep = ","
	}
	cum := int64(0)
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{%s%sle=%q} %d\n", name, labels, sep, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, cum)
	h.sumMu.Lock()
	sum := h.sum
	h.sumMu.Unlock()
	braces := ""
	if labels != "" {
		braces = "{" + labels + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %s\n", name, braces, FormatFloat(sum))
	fmt.Fprintf(w, "%s_count%s %d\n", name, braces, cum)
}

// FormatFloat formats a sample's value: the shortest decimal that reads
// back as v, and +Inf for positive infinity.
func FormatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
