package llm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// controller paces one Client's attempts: an adaptive cap on attempts in
// flight, optional configured requests- and tokens-per-minute limiters,
// the pacing learned from the server's rate-limit headers, and the
// counters Client.Health reports.
//
// The cap is halved only on evidence of a real limit: a burst of 429s
// among the attempts sent since it last changed (see window429). A lone
// 429 costs only its own request, which waits out its Retry-After. The
// cap grows back by one after each window of as many successes as the
// cap, up to max.
type controller struct {
	max   int
	rpm   *rate.Limiter // configured; nil = unlimited
	tpm   *rate.Limiter // configured; nil = unlimited
	paced *pacer        // learned from x-ratelimit-* headers

	mu          sync.Mutex
	limit       int
	inflight    int
	epoch       uint64 // bumped on every decrease
	successes   int    // since the last change of limit
	waiters     waitQueue
	demand      []chan struct{} // Admit callers waiting, first come first woken
	promised    int             // attempts admissions promised that have not queued yet
	recent      window429
	lowered     string // why the limit was last lowered
	loweredAt   time.Time
	rateLimited minuteCounter // 429s
	timeouts    minuteCounter // attempts cut by a deadline
}

type waiter struct {
	ch      chan struct{}
	granted bool
	epoch   uint64
	order   uint64 // from WithPriority
	seq     uint64 // arrival, among equal orders
	pos     int    // index in the queue; -1 once out of it
}

func newController(maxInFlight int, rpm, tpm float64) *controller {
	c := &controller{max: maxInFlight, limit: maxInFlight, paced: &pacer{}}
	if rpm > 0 {
		c.rpm = rate.NewLimiter(rate.Limit(rpm/60), max(1, int(rpm/60)))
	}
	if tpm > 0 {
		c.tpm = rate.NewLimiter(rate.Limit(tpm/60), max(1, int(math.Min(tpm, math.MaxInt32))))
	}
	return c
}

// acquire waits for an in-flight slot, in the order of ctx's priority
// (see WithPriority). It returns the epoch the slot was granted in, to be
// passed to outcome.
func (c *controller) acquire(ctx context.Context) (uint64, error) {
	adm := promiseOf(ctx, c)
	c.mu.Lock()
	if c.inflight < c.limit && c.waiters.Len() == 0 {
		c.inflight++
		e := c.epoch
		adm.keepOneLocked()
		c.mu.Unlock()
		return e, nil
	}
	w := &waiter{ch: make(chan struct{}), order: priorityOf(ctx)}
	c.waiters.push(w)
	adm.keepOneLocked()
	c.mu.Unlock()

	select {
	case <-w.ch:
		return w.epoch, nil
	case <-ctx.Done():
		c.mu.Lock()
		if w.granted {
			c.inflight--
			c.grantLocked()
		} else {
			c.waiters.remove(w)
			c.wakeDemandLocked()
		}
		c.mu.Unlock()
		return 0, context.Cause(ctx)
	}
}

func (c *controller) release() {
	c.mu.Lock()
	c.inflight--
	c.grantLocked()
	c.mu.Unlock()
}

func (c *controller) grantLocked() {
	for c.inflight < c.limit && c.waiters.Len() > 0 {
		w := c.waiters.pop()
		w.granted = true
		w.epoch = c.epoch
		c.inflight++
		close(w.ch)
	}
	c.wakeDemandLocked()
}

// admit waits until the attempts waiting for a slot, plus those that
// earlier admissions promised and have not yet queued, are fewer than the
// limit; then it promises weight more. Each of the admission's first
// weight attempts keeps one as it asks for a slot (see acquire); settle
// drops the rest.
func (c *controller) admit(ctx context.Context, weight int) (*admission, error) {
	a := &admission{c: c}
	weight = max(weight, 1)
	a.left.Store(int64(weight))
	c.mu.Lock()
	if c.demandLocked() && len(c.demand) == 0 {
		c.promised += weight
		c.mu.Unlock()
		return a, nil
	}
	ch := make(chan struct{})
	c.demand = append(c.demand, ch)
	c.mu.Unlock()
	select {
	case <-ch:
		c.mu.Lock()
		c.promised += weight
		c.wakeDemandLocked()
		c.mu.Unlock()
		return a, nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if i := slices.Index(c.demand, ch); i >= 0 {
			c.demand = slices.Delete(c.demand, i, i+1)
		} else {
			c.wakeDemandLocked() // woken as it gave up: pass the turn on
		}
		return nil, context.Cause(ctx)
	}
}

func (c *controller) demandLocked() bool { return c.waiters.Len()+c.promised < c.limit }

// wakeDemandLocked lets the next admission through while there is demand.
func (c *controller) wakeDemandLocked() {
	if len(c.demand) > 0 && c.demandLocked() {
		close(c.demand[0])
		c.demand = slices.Delete(c.demand, 0, 1)
	}
}

// An admission is work let in by admit: weight attempts promised to come.
type admission struct {
	c    *controller
	left atomic.Int64 // promised attempts that have not asked for a slot yet
}

type admissionKey struct{}

// settle ends the promise: the admission's work will send no more
// attempts than it has.
func (a *admission) settle() {
	if n := a.left.Swap(0); n > 0 {
		a.c.mu.Lock()
		a.keptLocked(n)
		a.c.mu.Unlock()
	}
}

func (a *admission) keptLocked(n int64) {
	a.c.promised -= int(n)
	a.c.wakeDemandLocked()
}

// promiseOf returns ctx's admission if an attempt asking c for a slot
// under ctx keeps one of its promised attempts, else nil. An attempt to
// another endpoint's controller keeps none: the admission's counts belong
// to c's lock, and its promise is of c's attempts.
func promiseOf(ctx context.Context, c *controller) *admission {
	if a, ok := ctx.Value(admissionKey{}).(*admission); ok && a.c == c && a.left.Add(-1) >= 0 {
		return a
	}
	return nil
}

// keepOneLocked counts one promised attempt as come; a is nil when the
// attempt was not promised.
func (a *admission) keepOneLocked() {
	if a != nil {
		a.keptLocked(1)
	}
}

// outcome is how an attempt ended, as far as pacing is concerned.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeRateLimited
	outcomeTimeout
	outcomeOther
)

// record counts how an attempt sent in epoch ended, lowers the limit on
// a burst of 429s, and raises it after a window of successes. It returns
// the new limit and whether it was lowered.
func (c *controller) record(epoch uint64, o outcome, now time.Time) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o {
	case outcomeRateLimited:
		c.rateLimited.add(now)
	case outcomeTimeout:
		c.timeouts.add(now)
	}
	// Attempts sent under an older limit say nothing about this one.
	if epoch == c.epoch {
		c.recent.add(o == outcomeRateLimited)
		if c.recent.burst(c.inflight - 1) { // the others still in flight
			c.lowerLocked(now, fmt.Sprintf("%d of the last %d attempts were answered 429", c.recent.hits, c.recent.n))
			return c.limit, true
		}
	}
	if o == outcomeOK {
		c.succeededLocked()
	}
	return c.limit, false
}

func (c *controller) lowerLocked(now time.Time, reason string) {
	c.limit = max(1, c.limit/2)
	c.epoch++
	c.successes = 0
	c.recent = window429{}
	c.lowered, c.loweredAt = reason, now
}

// succeededLocked counts a success; after a window of limit successes the
// limit grows by one.
func (c *controller) succeededLocked() {
	if c.limit >= c.max {
		return
	}
	c.successes++
	if c.successes >= c.limit {
		c.limit++
		c.successes = 0
		c.grantLocked()
	}
}

func (c *controller) currentLimit() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}

// window429 remembers whether each of the last attempts sent since the
// limit last changed was answered 429. A burst is burstMin 429s that are
// also at least a quarter of the window: at 4% random 429s, 16 of 64 is
// about eight standard deviations away, while a server that refuses
// everything is recognized after burstMin to 16 attempts (16 when as many
// attempts as the window holds are in flight).
type window429 struct {
	ring [64]bool
	n    int // filled slots
	next int
	hits int // 429s in the window
}

const burstMin = 8

func (w *window429) add(is429 bool) {
	if w.n == len(w.ring) {
		if w.ring[w.next] {
			w.hits--
		}
	} else {
		w.n++
	}
	w.ring[w.next] = is429
	if is429 {
		w.hits++
	}
	w.next = (w.next + 1) % len(w.ring)
}

// burst reports a burst among the last attempts sent, pending of them
// still unanswered. A 429 comes back at once and a success only after the
// server's latency, so the first answers of an epoch are mostly its 429s:
// the unanswered attempts count as not 429 while the window has room.
func (w *window429) burst(pending int) bool {
	sent := min(w.n+max(pending, 0), len(w.ring))
	return w.hits >= burstMin && 4*w.hits >= sent
}

// reservation is what one attempt took from the token limiters, to be
// settled against the tokens it actually used.
type reservation struct {
	configured int   // tokens taken from the configured limiter
	learned    taken // tokens taken from the learned token limiter
	requests   taken // the request taken from the learned request limiter
}

// waitRate waits for the configured and learned request limiters and
// reserves est tokens with the token limiters (capped at each one's
// burst).
func (c *controller) waitRate(ctx context.Context, est int) (reservation, error) {
	var r reservation
	if c.rpm != nil {
		if err := c.rpm.Wait(ctx); err != nil {
			return r, rateErr(ctx, err)
		}
	}
	if c.tpm != nil {
		n := min(max(est, 1), c.tpm.Burst())
		if err := c.tpm.WaitN(ctx, n); err != nil {
			return r, rateErr(ctx, err)
		}
		r.configured = n
	}
	var err error
	if r.requests, err = c.paced.requests.take(ctx, 1); err != nil {
		c.settle(r, -1)
		return reservation{}, err
	}
	if r.learned, err = c.paced.tokens.take(ctx, est); err != nil {
		c.settle(r, -1)
		return reservation{}, err
	}
	return r, nil
}

// settle corrects the token reservations once the real count is known:
// extra tokens are taken without waiting (later attempts wait for them);
// unused ones are given back. actual < 0 means the attempt was refused or
// failed, and everything is given back.
func (c *controller) settle(r reservation, actual int64) {
	actual = max(actual, 0)
	adjustLimiter(c.tpm, actual-int64(r.configured))
	c.paced.tokens.adjust(r.learned, actual)
}

// adjustLimiter takes diff more tokens from l, or gives -diff back.
func adjustLimiter(l *rate.Limiter, diff int64) {
	if l == nil || diff == 0 {
		return
	}
	burst := int64(l.Burst())
	diff = max(-burst, min(diff, burst))
	// ReserveN with a negative count returns tokens to the bucket; the
	// bucket is capped at its burst on the next use. Pinned by
	// TestTokenLimiterRefund.
	l.ReserveN(time.Now(), int(diff))
}

// rateErr prefers the context's own error: rate.Wait reports "would
// exceed context deadline" before the deadline has actually passed.
func rateErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// minuteCounter counts events over the last minute in one-second slots.
type minuteCounter struct {
	slots [60]struct{ sec, n int64 }
}

func (m *minuteCounter) add(now time.Time) {
	s := now.Unix()
	slot := &m.slots[s%60]
	if slot.sec != s {
		slot.sec, slot.n = s, 0
	}
	slot.n++
}

func (m *minuteCounter) lastMinute(now time.Time) int64 {
	s := now.Unix()
	var n int64
	for _, slot := range m.slots {
		if s-slot.sec < 60 {
			n += slot.n
		}
	}
	return n
}
