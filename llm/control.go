package llm

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// controller paces one Client's attempts: an adaptive cap on attempts in
// flight (halved on a 429, raised by one after each window of successes,
// up to max), a shared pause set by Retry-After, and optional
// requests-per-minute and tokens-per-minute limiters.
type controller struct {
	max int
	rpm *rate.Limiter // nil = unlimited
	tpm *rate.Limiter // nil = unlimited

	mu         sync.Mutex
	limit      int
	inflight   int
	epoch      uint64 // bumped on every decrease
	successes  int    // since the last change of limit
	waiters    []*waiter
	pauseUntil time.Time
}

type waiter struct {
	ch      chan struct{}
	granted bool
	epoch   uint64
}

func newController(maxInFlight int, rpm, tpm float64) *controller {
	c := &controller{max: maxInFlight, limit: maxInFlight}
	if rpm > 0 {
		c.rpm = rate.NewLimiter(rate.Limit(rpm/60), max(1, int(rpm/60)))
	}
	if tpm > 0 {
		c.tpm = rate.NewLimiter(rate.Limit(tpm/60), max(1, int(math.Min(tpm, math.MaxInt32))))
	}
	return c
}

// acquire waits for an in-flight slot. It returns the epoch the slot was
// granted in, to be passed to throttled.
func (c *controller) acquire(ctx context.Context) (uint64, error) {
	if err := c.waitPause(ctx); err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.inflight < c.limit && len(c.waiters) == 0 {
		c.inflight++
		e := c.epoch
		c.mu.Unlock()
		return e, nil
	}
	w := &waiter{ch: make(chan struct{})}
	c.waiters = append(c.waiters, w)
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
			for i, x := range c.waiters {
				if x == w {
					c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
					break
				}
			}
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
	for c.inflight < c.limit && len(c.waiters) > 0 {
		w := c.waiters[0]
		c.waiters[0] = nil
		c.waiters = c.waiters[1:]
		w.granted = true
		w.epoch = c.epoch
		c.inflight++
		close(w.ch)
	}
}

// throttled halves the limit after a 429 on an attempt sent in epoch.
// 429s from attempts sent before the last decrease were caused by the
// old limit and do not halve it again. It returns the limit and whether
// it changed.
func (c *controller) throttled(epoch uint64) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return c.limit, false
	}
	c.limit = max(1, c.limit/2)
	c.epoch++
	c.successes = 0
	return c.limit, true
}

// succeeded counts a success; after a window of limit successes the
// limit grows by one.
func (c *controller) succeeded() {
	c.mu.Lock()
	defer c.mu.Unlock()
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

// pause holds back new attempts until t.
func (c *controller) pause(t time.Time) {
	c.mu.Lock()
	if t.After(c.pauseUntil) {
		c.pauseUntil = t
	}
	c.mu.Unlock()
}

func (c *controller) waitPause(ctx context.Context) error {
	for {
		c.mu.Lock()
		d := time.Until(c.pauseUntil)
		c.mu.Unlock()
		if d <= 0 {
			return nil
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// waitRate waits for the request-rate limiter and reserves est tokens
// with the token-rate limiter. It returns the number of tokens actually
// reserved (est, capped at the limiter's burst), to be settled.
func (c *controller) waitRate(ctx context.Context, est int) (int, error) {
	if c.rpm != nil {
		if err := c.rpm.Wait(ctx); err != nil {
			return 0, rateErr(ctx, err)
		}
	}
	if c.tpm == nil {
		return 0, nil
	}
	n := min(max(est, 1), c.tpm.Burst())
	if err := c.tpm.WaitN(ctx, n); err != nil {
		return 0, rateErr(ctx, err)
	}
	return n, nil
}

// settle corrects a token reservation once the real count is known:
// extra tokens are taken without waiting (later attempts wait for them);
// unused ones are given back. actual < 0 means the attempt failed and
// everything is given back.
func (c *controller) settle(reserved int, actual int64) {
	if c.tpm == nil || reserved == 0 {
		return
	}
	if actual < 0 {
		actual = 0
	}
	diff := actual - int64(reserved)
	if diff == 0 {
		return
	}
	burst := int64(c.tpm.Burst())
	diff = max(-burst, min(diff, burst))
	// ReserveN with a negative count returns tokens to the bucket; the
	// bucket is capped at its burst on the next use. Pinned by
	// TestTokenLimiterRefund.
	c.tpm.ReserveN(time.Now(), int(diff))
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
