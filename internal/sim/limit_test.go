package sim

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestRateLimitBuckets(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at     time.Duration // since t0
		tokens int
		ok     bool
		wait   time.Duration // when refused
		header map[string]string
	}
	tests := []struct {
		name     string
		rpm, tpm int
		steps    []step
	}{
		{"requests", 60, 0, []step{
			{0, 10, true, 0, map[string]string{"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59", "x-ratelimit-reset-requests": "1s"}},
		}},
		{"tokens", 0, 6000, []step{
			{0, 4000, true, 0, map[string]string{"x-ratelimit-limit-tokens": "6000", "x-ratelimit-remaining-tokens": "2000", "x-ratelimit-reset-tokens": "40s"}},
			{0, 3000, false, 10 * time.Second, map[string]string{"x-ratelimit-remaining-tokens": "2000"}},
			{10 * time.Second, 3000, true, 0, map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1m0s"}},
			{70 * time.Second, 100000, true, 0, map[string]string{"x-ratelimit-remaining-tokens": "0"}}, // larger than a minute: waits for a full bucket
			{71 * time.Second, 100000, false, 59 * time.Second, nil},
		}},
		{"both", 60, 6000, []step{
			{0, 100, true, 0, map[string]string{"x-ratelimit-remaining-requests": "59", "x-ratelimit-remaining-tokens": "5900", "x-ratelimit-reset-tokens": "1s"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newRateLimit(tt.rpm, tt.tpm)
			for i, st := range tt.steps {
				h := http.Header{}
				wait, ok := l.admit(h, t0.Add(st.at), st.tokens)
				if ok != st.ok || (!ok && wait != st.wait) {
					t.Errorf("step %d: ok %v wait %v, want %v %v", i, ok, wait, st.ok, st.wait)
				}
				for k, v := range st.header {
					if got := h.Get(k); got != v {
						t.Errorf("step %d: %s = %q, want %q", i, k, got, v)
					}
				}
			}
		})
	}
	t.Run("a full minute of requests, then one more", func(t *testing.T) {
		l := newRateLimit(60, 0)
		for i := range 60 {
			if _, ok := l.admit(http.Header{}, t0, 1); !ok {
				t.Fatalf("request %d refused", i)
			}
		}
		h := http.Header{}
		wait, ok := l.admit(h, t0, 1)
		if ok || wait != time.Second || h.Get("x-ratelimit-remaining-requests") != "0" || h.Get("x-ratelimit-reset-requests") != "1m0s" {
			t.Errorf("61st: ok %v wait %v headers %v", ok, wait, h)
		}
		if _, ok := l.admit(http.Header{}, t0.Add(time.Second), 1); !ok {
			t.Error("refused a second later")
		}
	})
	t.Run("no limit sends no headers", func(t *testing.T) {
		h := http.Header{}
		if _, ok := newRateLimit(0, 0).admit(h, t0, 1e9); !ok || len(h) != 0 {
			t.Errorf("ok %v headers %v", ok, h)
		}
	})
}

// TestServerRateLimit: beyond its limit the server answers 429 with
// Retry-After; every response carries the x-ratelimit-* headers; admitted
// requests are charged the tokens their replies report.
func TestServerRateLimit(t *testing.T) {
	body := must(json.Marshal(seeded(renderedPrompts(t)[KindRollout], 1, 1)))
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Answers: testProblems(), LimitRPM: 6, LimitTPM: 100000, KeepLog: true})
		post := func() *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
			return rec
		}
		var charged int
		for i := range 6 {
			rec := post()
			var resp chatResponse
			if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &resp) != nil {
				t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body)
			}
			charged += resp.Usage.TotalTokens
			for _, h := range []string{"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
				"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"} {
				if rec.Header().Get(h) == "" {
					t.Errorf("request %d: no %s", i, h)
				}
			}
		}
		rec := post()
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "10" || rec.Header().Get("Retry-After-Ms") != "10000" ||
			rec.Header().Get("x-ratelimit-remaining-requests") != "0" || !strings.Contains(rec.Body.String(), "rate_limit_exceeded") {
			t.Fatalf("7th request: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		time.Sleep(10 * time.Second)
		if rec := post(); rec.Code != 200 {
			t.Fatalf("after the Retry-After: %d", rec.Code)
		}
		log := s.Log()
		var tokens, over int
		for _, e := range log {
			tokens += e.Tokens
			if e.OverLimit {
				over++
			}
		}
		if over != 1 || tokens != charged*7/6 {
			t.Errorf("log: %d over the limit, %d tokens charged; want 1 and %d", over, tokens, charged*7/6)
		}
		if got := log[0].Tokens; got == 0 || got*6 != charged {
			t.Errorf("first entry charged %d tokens", got)
		}
	})
}

// TestUnknownProblemReportedOnce: rollouts for problems outside the answers
// are reported once, then only counted.
func TestUnknownProblemReportedOnce(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	s := New(Config{Answers: testProblems(), Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	ps := loadPrompts(t)
	for i, p := range []string{"What is 6*7?", "What is 6*7?", "Name a prime above 10.", sampleProblem} {
		msgs, err := ps.RolloutMessages(p)
		if err != nil {
			t.Fatal(err)
		}
		complete(t, s, seeded(msgs, int64(i), 2))
	}
	if n := strings.Count(logged.String(), "not in the answers file"); n != 1 || !strings.Contains(logged.String(), "What is 6*7?") {
		t.Errorf("reported %d times:\n%s", n, logged.String())
	}
	if got := s.UnknownProblems(); got != 3 {
		t.Errorf("UnknownProblems = %d, want 3", got)
	}
}
