package sim

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// rateLimit is the simulated server-side rate limit: a bucket of requests
// and one of tokens, each holding at most one minute's allowance and
// refilled continuously, as OpenAI's limits behave. A request is admitted
// when the request bucket holds one request and the token bucket holds
// its tokens (or is full, for a request larger than a minute's
// allowance); admitted requests are charged at once.
type rateLimit struct {
	mu       sync.Mutex
	requests *bucket // nil: no limit
	tokens   *bucket // nil: no limit
}

func newRateLimit(rpm, tpm int) *rateLimit {
	l := &rateLimit{}
	if rpm > 0 {
		l.requests = &bucket{perMinute: float64(rpm), level: float64(rpm)}
	}
	if tpm > 0 {
		l.tokens = &bucket{perMinute: float64(tpm), level: float64(tpm)}
	}
	return l
}

// admit charges one request of tokens if the buckets allow it, and sets
// the x-ratelimit-* headers OpenAI sends on every response. When the
// request is refused it returns how long until it would be admitted.
func (l *rateLimit) admit(h http.Header, now time.Time, tokens int) (wait time.Duration, ok bool) {
	if l.requests == nil && l.tokens == nil {
		return 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	need := float64(tokens)
	for _, b := range []*bucket{l.requests, l.tokens} {
		if b != nil {
			b.refill(now)
		}
	}
	if l.tokens != nil {
		need = min(need, l.tokens.perMinute)
		wait = l.tokens.wait(need)
	}
	if l.requests != nil {
		wait = max(wait, l.requests.wait(1))
	}
	if wait == 0 {
		l.requests.take(1)
		l.tokens.take(need)
	}
	l.requests.announce(h, "requests")
	l.tokens.announce(h, "tokens")
	return wait, wait == 0
}

// bucket is one limit's allowance; the methods of a nil bucket do nothing.
type bucket struct {
	perMinute float64
	level     float64
	at        time.Time
}

func (b *bucket) refill(now time.Time) {
	if !b.at.IsZero() && now.After(b.at) {
		b.level = min(b.perMinute, b.level+now.Sub(b.at).Minutes()*b.perMinute)
	}
	b.at = now
}

func (b *bucket) take(n float64) {
	if b != nil {
		b.level -= n
	}
}

// wait is how long until the bucket holds n.
func (b *bucket) wait(n float64) time.Duration {
	if b.level >= n {
		return 0
	}
	return time.Duration(math.Ceil((n - b.level) / b.perMinute * float64(time.Minute)))
}

// announce writes the limit, what remains and the time until the bucket
// is full again, in OpenAI's header names and formats ("1s", "6m0s",
// "120ms").
func (b *bucket) announce(h http.Header, what string) {
	if b == nil {
		return
	}
	reset := time.Duration((b.perMinute - b.level) / b.perMinute * float64(time.Minute))
	h.Set("x-ratelimit-limit-"+what, strconv.FormatInt(int64(b.perMinute), 10))
	h.Set("x-ratelimit-remaining-"+what, strconv.FormatInt(int64(max(0, math.Floor(b.level))), 10))
	h.Set("x-ratelimit-reset-"+what, reset.Round(time.Millisecond).String())
}
