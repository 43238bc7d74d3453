package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		ok      bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"fraction", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(10 * time.Second).Format(http.TimeFormat)}, 10 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{"bad ms falls back", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "2"}, 2 * time.Second, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "tomorrow"}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: got %v %v, want %v %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBackoff(t *testing.T) {
	base, maxWait := 10*time.Millisecond, 100*time.Millisecond
	for attempt := 1; attempt <= 10; attempt++ {
		ceil := min(maxWait, base<<(attempt-1))
		var top time.Duration
		for range 200 {
			d := backoff(attempt, base, maxWait)
			if d < 0 || d > ceil {
				t.Fatalf("attempt %d: %v outside [0, %v]", attempt, d, ceil)
			}
			top = max(top, d)
		}
		if top < ceil/2 {
			t.Errorf("attempt %d: largest of 200 waits %v, expected near %v", attempt, top, ceil)
		}
	}
	if d := backoff(1, 0, 0); d != 0 {
		t.Errorf("zero base: %v", d)
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0.5", "Wed, 21 Oct 2015 07:28:00 GMT", "", "1e400", "-0", "Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("Retry-After", v)
		if d, ok := retryAfter(h, time.Now()); ok && d < 0 {
			t.Errorf("%q: negative wait %v", v, d)
		}
	})
}
