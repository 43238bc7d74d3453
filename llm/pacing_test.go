package llm

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name               string
		header             map[string]string
		requests, tokens   announced
		reqReset, tokReset time.Duration
	}{
		{"OpenAI", map[string]string{
			"x-ratelimit-limit-requests": "10000", "x-ratelimit-remaining-requests": "9999", "x-ratelimit-reset-requests": "6ms",
			"x-ratelimit-limit-tokens": "2000000", "x-ratelimit-remaining-tokens": "1999940", "x-ratelimit-reset-tokens": "6m0s",
		}, announced{10000, 9999, 6 * time.Millisecond}, announced{2000000, 1999940, 6 * time.Minute}, 0, 0},
		{"seconds as a number", map[string]string{
			"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5",
		}, announced{60, 0, 1500 * time.Millisecond}, announced{-1, -1, 0}, 0, 0},
		{"fractional Go duration", map[string]string{"x-ratelimit-reset-tokens": "2.383s"},
			announced{-1, -1, 0}, announced{-1, -1, 2383 * time.Millisecond}, 0, 0},
		{"garbage", map[string]string{
			"x-ratelimit-limit-requests": "many", "x-ratelimit-remaining-requests": "-3", "x-ratelimit-reset-requests": "soon",
			"x-ratelimit-limit-tokens": "1e6", "x-ratelimit-remaining-tokens": " 7 ", "x-ratelimit-reset-tokens": "-1s",
		}, announced{-1, -1, 0}, announced{-1, 7, 0}, 0, 0},
		{"none", nil, announced{-1, -1, 0}, announced{-1, -1, 0}, 0, 0},
		{"blank", map[string]string{"x-ratelimit-limit-requests": "  ", "x-ratelimit-reset-tokens": " "},
			announced{-1, -1, 0}, announced{-1, -1, 0}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			req, tok := rateLimitHeaders(h)
			if req != tt.requests || tok != tt.tokens {
				t.Errorf("got %+v %+v, want %+v %+v", req, tok, tt.requests, tt.tokens)
			}
		})
	}
}

// BenchmarkRateLimitHeaders reads the headers of a response from a server
// that sends none (vLLM, the simulated endpoint) and from OpenAI.
func BenchmarkRateLimitHeaders(b *testing.B) {
	openAI := http.Header{}
	for k, v := range map[string]string{
		"x-ratelimit-limit-requests": "10000", "x-ratelimit-remaining-requests": "9999", "x-ratelimit-reset-requests": "6ms",
		"x-ratelimit-limit-tokens": "2000000", "x-ratelimit-remaining-tokens": "1999940", "x-ratelimit-reset-tokens": "6m0s",
	} {
		openAI.Set(k, v)
	}
	for _, tc := range []struct {
		name string
		h    http.Header
	}{{"none", http.Header{"Content-Type": {"application/json"}}}, {"openai", openAI}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rateLimitHeaders(tc.h)
			}
		})
	}
}

func FuzzRateLimitHeaders(f *testing.F) {
	for _, seed := range [][3]string{{"600", "599", "100ms"}, {"0", "0", "0s"}, {"x", "", "6m0s"}, {"9223372036854775807", "1", "1e9"}, {"1", "2", "NaN"}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, limit, remaining, reset string) {
		h := http.Header{}
		h.Set("x-ratelimit-limit-requests", limit)
		h.Set("x-ratelimit-remaining-requests", remaining)
		h.Set("x-ratelimit-reset-requests", reset)
		a, _ := rateLimitHeaders(h)
		if a.limit < -1 || a.remaining < -1 || a.reset < 0 {
			t.Fatalf("%q %q %q read as %+v", limit, remaining, reset, a)
		}
		var l learnedLimit
		l.observe(a, taken{}, time.Now()) // must not panic, whatever the server says
		if s, ok := l.status(); ok && (s.Limit != a.limit || math.IsNaN(s.PerMinute) || s.PerMinute <= 0) {
			t.Fatalf("learned %+v from %+v", s, a)
		}
	})
}

// TestLearnedLimit: the local bucket paces at the announced limit per
// minute, is never fuller than what the server says remains (corrected
// for refill and for what was taken since), and learns a longer window
// from the reset time only when it is clearly longer.
func TestLearnedLimit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	near := func(got, want float64) bool { return math.Abs(got-want) < 0.01 }

	t.Run("first news clamps the full bucket to what remains", func(t *testing.T) {
		var l learnedLimit
		l.observe(announced{600, 100, 50 * time.Second}, taken{}, t0)
		if got := l.lim.TokensAt(t0); !near(got, 100) {
			t.Errorf("tokens %v, want 100", got)
		}
		if got := float64(l.lim.Limit()); !near(got, 10) {
			t.Errorf("rate %v/s, want 10", got)
		}
		if s, _ := l.status(); s.PerMinute != 600 || s.Remaining != 100 || s.Reset != 50*time.Second {
			t.Errorf("status %+v", s)
		}
	})
	t.Run("stale news is corrected for refill and for what was taken since", func(t *testing.T) {
		var l learnedLimit
		l.observe(announced{600, 600, 0}, taken{}, t0) // full: 600 tokens
		l.lim.ReserveN(t0, 500)                        // 100 left locally
		sent := taken{lim: l.lim, n: 1, mark: l.charged, at: t0}
		l.charged += 50 // 50 more taken by attempts sent after this one
		// 2s later the answer says 200 remained when it arrived: the
		// server may hold up to 200 + 20 refilled - 50 = 170; the local
		// bucket holds 100 + 20 = 120, so it is left alone.
		now := t0.Add(2 * time.Second)
		l.observe(announced{600, 200, 0}, sent, now)
		if got := l.lim.TokensAt(now); !near(got, 120) {
			t.Errorf("tokens %v, want 120 (untouched)", got)
		}
		// An answer saying 60 remained: at most 60 + 20 - 50 = 30 now.
		l.observe(announced{600, 60, 0}, sent, now)
		if got := l.lim.TokensAt(now); !near(got, 30) {
			t.Errorf("tokens %v, want 30", got)
		}
		// A budget spent elsewhere: at most 0 now.
		l.observe(announced{600, 0, time.Minute}, sent, now)
		if got := l.lim.TokensAt(now); got > 0.01 {
			t.Errorf("tokens %v, want 0", got)
		}
	})
	t.Run("a changed limit is adopted", func(t *testing.T) {
		var l learnedLimit
		l.observe(announced{600, 600, 0}, taken{}, t0)
		l.observe(announced{1200, 1200, 0}, taken{}, t0)
		if got := float64(l.lim.Limit()); !near(got, 20) || l.lim.Burst() != 1200 {
			t.Errorf("rate %v/s burst %d, want 20 and 1200", got, l.lim.Burst())
		}
	})
	tests := []struct {
		name   string
		news   announced
		window time.Duration
	}{
		{"a minute by default", announced{600, 300, 30 * time.Second}, time.Minute},
		{"a daily limit shows in its reset", announced{10000, 5000, 12 * time.Hour}, 24 * time.Hour},
		{"a long reset with little used is not trusted", announced{150000, 149984, 6 * time.Minute}, time.Minute},
		{"no reset", announced{600, 0, 0}, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l learnedLimit
			l.observe(tt.news, taken{}, t0)
			if l.window != tt.window {
				t.Errorf("window %v, want %v", l.window, tt.window)
			}
		})
	}
	t.Run("no news, no pacing", func(t *testing.T) {
		var l learnedLimit
		l.observe(announced{-1, -1, 0}, taken{}, t0)
		l.observe(announced{600, -1, 0}, taken{}, t0)
		if got, err := l.take(t.Context(), 1e9); err != nil || got.lim != nil {
			t.Errorf("took %+v, %v before any limit was announced", got, err)
		}
	})
}
