package llm

import (
	"slices"
	"sync"
	"time"
)

// The per-attempt deadline of a stage is learned from the latencies of
// its successful attempts: deadlineQuantile of the last latencyWindow of
// them, times deadlineMargin, kept between Options.AttemptTimeoutFloor
// and Options.AttemptTimeout. Until a stage has minLatencySamples, the
// ceiling applies.
const (
	latencyWindow     = 256
	minLatencySamples = 20
	deadlineQuantile  = 0.99
	deadlineMargin    = 3
	// recomputeEvery successes the deadline is computed again (a sort of
	// the window), or at once after a slower one: often enough to follow
	// the endpoint, rarely enough that a busy run does not spend its CPU
	// sorting.
	recomputeEvery = 16
)

// deadlines learns how long each stage's attempts normally take, so that
// an attempt that runs far beyond it (a hung request) is cut and retried
// instead of holding its slot until the ceiling.
type deadlines struct {
	floor, ceiling time.Duration

	mu      sync.Mutex
	stages  map[string]*latencies
	scratch []time.Duration // for sorting
}

// latencies is a ring of one stage's recent successful-attempt latencies
// and the deadline last computed from them (0: not enough samples).
type latencies struct {
	ring     [latencyWindow]time.Duration
	n, next  int
	deadline time.Duration
	stale    int // successes since the deadline was computed
}

func newDeadlines(floor, ceiling time.Duration) *deadlines {
	return &deadlines{floor: min(floor, ceiling), ceiling: ceiling, stages: map[string]*latencies{}}
}

// observe records the latency of a successful attempt of stage.
func (d *deadlines) observe(stage string, took time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.stages[stage]
	if l == nil {
		l = &latencies{}
		d.stages[stage] = l
	}
	l.ring[l.next] = took
	l.next = (l.next + 1) % latencyWindow
	l.n = min(l.n+1, latencyWindow)
	l.stale++
	// A sample beyond the quantile the deadline came from is computed in at
	// once: a slower endpoint must never see its normal requests cut.
	slower := deadlineMargin*took > l.deadline
	if l.n >= minLatencySamples && (l.deadline == 0 || slower || l.stale >= recomputeEvery) {
		l.deadline = d.compute(l.ring[:l.n])
		l.stale = 0
	}
}

// compute sorts a copy of the samples (a few microseconds for a full
// window, next to an HTTP request).
func (d *deadlines) compute(samples []time.Duration) time.Duration {
	sorted := append(d.scratch[:0], samples...)
	slices.Sort(sorted)
	d.scratch = sorted
	q := sorted[min(len(sorted)-1, int(deadlineQuantile*float64(len(sorted))))]
	return max(d.floor, min(d.ceiling, deadlineMargin*q))
}

// forAttempt is the deadline of an attempt of stage after cuts earlier
// attempts of the same request were cut by a learned deadline: the
// learned one doubled per cut, so that a genuinely long request still
// finishes, up to the ceiling. learned is false when the ceiling applies
// because nothing shorter was learned.
func (d *deadlines) forAttempt(stage string, cuts int) (deadline time.Duration, learned bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.stages[stage]
	if l == nil || l.deadline == 0 || l.deadline >= d.ceiling {
		return d.ceiling, false
	}
	deadline = l.deadline
	for range cuts {
		deadline *= 2
		if deadline >= d.ceiling {
			return d.ceiling, false
		}
	}
	return deadline, true
}

// learned returns the learned deadline of every stage that has one.
func (d *deadlines) learned() map[string]time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]time.Duration{}
	for stage, l := range d.stages {
		if l.deadline != 0 {
			out[stage] = l.deadline
		}
	}
	return out
}
