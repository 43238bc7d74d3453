package llm

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff is the wait before attempt+1 after attempt failed: "full
// jitter", uniform in [0, min(maxWait, base·2^(attempt-1))].
func backoff(attempt int, base, maxWait time.Duration) time.Duration {
	ceil := base
	for i := 1; i < attempt && ceil < maxWait; i++ {
		ceil *= 2
	}
	ceil = min(ceil, maxWait)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil + 1)
}

// retryAfter reads how long the server asked us to wait: OpenAI's
// retry-after-ms, else Retry-After as delay-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms <= 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s >= 0 && s <= 1e9) { // also rejects NaN
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
