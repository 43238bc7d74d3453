package llm

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pacer paces attempts by the limits a server announces in OpenAI's
// x-ratelimit-* headers, so that a client finds a rate limit and stays
// just under it without being told: one learned limit for requests and
// one for tokens.
type pacer struct {
	requests, tokens learnedLimit
}

// learnedLimit mirrors one server-side limit with a local token bucket.
// The server's bucket holds at most the announced limit and refills it
// once per window (a minute, unless the reset times say longer); the
// local one refills alike and is never fuller than what the server last
// said remains, corrected for what refilled and what this client took
// since the attempt that brought the news was sent.
type learnedLimit struct {
	mu      sync.Mutex
	lim     *rate.Limiter // nil until the server announces the limit
	limit   int64         // as announced
	window  time.Duration // refill period of the whole limit
	remain  int64         // as last reported
	reset   time.Duration // as last reported: time until the bucket is full
	seen    time.Time     // when last reported
	charged int64         // everything taken so far, for the correction
}

// taken is what one attempt took from a learnedLimit.
type taken struct {
	lim  *rate.Limiter // nil: nothing taken
	n    int
	mark int64 // learnedLimit.charged right after the take
	at   time.Time
}

// take waits until n units (capped at the limit) are available and takes
// them. Before the server has announced a limit it takes nothing.
func (l *learnedLimit) take(ctx context.Context, n int) (taken, error) {
	l.mu.Lock()
	lim := l.lim
	l.mu.Unlock()
	if lim == nil {
		return taken{}, nil
	}
	n = min(max(n, 1), lim.Burst())
	r := lim.ReserveN(time.Now(), n)
	if !r.OK() {
		return taken{}, nil
	}
	if err := sleep(ctx, r.Delay()); err != nil {
		r.Cancel()
		return taken{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.charged += int64(n)
	return taken{lim: lim, n: n, mark: l.charged, at: time.Now()}, nil
}

// adjust settles t against the units actually used.
func (l *learnedLimit) adjust(t taken, actual int64) {
	if t.lim == nil {
		return
	}
	diff := actual - int64(t.n)
	adjustLimiter(t.lim, diff)
	l.mu.Lock()
	l.charged += diff
	l.mu.Unlock()
}

// observe takes in what a response of the attempt that took t said
// about this limit.
func (l *learnedLimit) observe(a announced, t taken, now time.Time) {
	if a.limit <= 0 || a.remaining < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.learnWindow(a)
	perSecond := float64(a.limit) / l.window.Seconds()
	if l.lim == nil {
		l.lim = rate.NewLimiter(rate.Limit(perSecond), int(min(a.limit, math.MaxInt32)))
	} else if l.limit != a.limit || l.lim.Limit() != rate.Limit(perSecond) {
		l.lim.SetLimitAt(now, rate.Limit(perSecond))
		l.lim.SetBurstAt(now, int(min(a.limit, math.MaxInt32)))
	}
	l.limit, l.remain, l.reset, l.seen = a.limit, a.remaining, a.reset, now

	// What the server holds now, at most: what it reported, plus what it
	// refilled since the attempt was sent, minus what was taken since.
	level := float64(a.remaining)
	if t.lim == l.lim {
		level += perSecond*now.Sub(t.at).Seconds() - float64(l.charged-t.mark)
	}
	level = max(0, min(level, float64(a.limit)))
	if tok := l.lim.TokensAt(now); tok > level {
		l.lim.ReserveN(now, int(math.Ceil(tok-level)))
	}
}

// learnWindow takes the refill period to be a minute (OpenAI's limits
// are per minute) unless the reset time says it is clearly longer, as
// for a daily limit: then the period is the reset time scaled up by the
// share used, once at least a tenth is used (so a rounded remaining
// count cannot mislead it).
func (l *learnedLimit) learnWindow(a announced) {
	if l.window == 0 || a.limit != l.limit {
		l.window = time.Minute
	}
	used := a.limit - a.remaining
	if a.reset <= 0 || used*10 < a.limit {
		return
	}
	if w := float64(a.reset) * float64(a.limit) / float64(used); w > float64(2*time.Minute) {
		l.window = time.Duration(min(w, float64(24*time.Hour)))
	}
}

// status is the limit as last learned; ok is false before any news.
func (l *learnedLimit) status() (s LearnedLimit, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lim == nil {
		return LearnedLimit{}, false
	}
	perMinute := float64(l.limit) * float64(time.Minute) / float64(l.window)
	return LearnedLimit{PerMinute: perMinute, Limit: l.limit, Remaining: l.remain, Reset: l.reset, At: l.seen}, true
}

// announced is one limit as a response's headers state it.
type announced struct {
	limit, remaining int64 // -1 when absent or unreadable
	reset            time.Duration
}

// rateLimitHeaders reads OpenAI's x-ratelimit-{limit,remaining,reset}-
// {requests,tokens} headers, which it sends on every response.
func rateLimitHeaders(h http.Header) (requests, tokens announced) {
	read := func(what string) announced {
		return announced{
			limit:     headerInt(h, "X-Ratelimit-Limit-"+what),
			remaining: headerInt(h, "X-Ratelimit-Remaining-"+what),
			reset:     headerDuration(h, "X-Ratelimit-Reset-"+what),
		}
	}
	return read("Requests"), read("Tokens")
}

// headerInt reads a count; -1 when absent or bad. An absent header, as
// from vLLM or the simulated endpoint on every response, is not given to
// strconv, whose error for "" is an allocation.
func headerInt(h http.Header, name string) int64 {
	s := strings.TrimSpace(h.Get(name))
	if s == "" {
		return -1
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// headerDuration reads a reset time: a Go-style duration as OpenAI sends
// ("1s", "6m0s", "120ms") or a number of seconds. 0 when absent or bad.
func headerDuration(h http.Header, name string) time.Duration {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}
