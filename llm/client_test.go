package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestRetryThenSuccess(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n < 3 {
			writeJSON(w, 503, []byte(`{"error":{"message":"busy","code":503}}`))
			return
		}
		writeJSON(w, 200, okBody(1))
	})
	meter := NewMeter(map[string]Price{"m": {PromptPerMTok: 1e6, CompletionPerMTok: 2e6}}, Budget{})
	c := newTestClient(t, srv.endpoint(), Options{MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}, nil, meter)
	resp, err := c.Chat(t.Context(), simpleRequest("q"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 3 || srv.hits.Load() != 3 || resp.Cached {
		t.Errorf("attempts %d, hits %d, cached %v", resp.Attempts, srv.hits.Load(), resp.Cached)
	}
	if resp.PromptTokens != 10 || resp.CompletionTokens != 5 || resp.CostUSD != 10+10 {
		t.Errorf("tokens %d/%d cost %v", resp.PromptTokens, resp.CompletionTokens, resp.CostUSD)
	}
	s := meter.Snapshot().Stages["rollout"]
	want := StageStats{Requests: 1, Retries: 2, PromptTokens: 10, CompletionTokens: 5, CostUSD: 20,
		Models: map[string]int64{"m": 1}, ErrorsByReason: map[string]int64{"503": 2}, FinishReasons: map[string]int64{"stop": 1}, LargestCompletion: 5}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("stats\n got %+v\nwant %+v", s, want)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel() // waits a second of wall, no CPU: overlapped with the others
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, 429, []byte(`{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`))
			return
		}
		writeJSON(w, 200, okBody(1))
	})
	opt := Options{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Second}
	c := newTestClient(t, srv.endpoint(), opt, nil, nil)
	if _, err := c.Chat(t.Context(), simpleRequest("q")); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	gap := srv.times[1].Sub(srv.times[0])
	srv.mu.Unlock()
	if gap < time.Second {
		t.Errorf("retry came %v after the 429, want >= 1s", gap)
	}
}

// TestLone429DoesNotPauseOthers: a 429 delays its own retry by its
// Retry-After; other requests keep flowing meanwhile, and the in-flight
// limit stays where it was. Runs in fake time (synctest).
func TestLone429DoesNotPauseOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		h := func(w http.ResponseWriter, r *http.Request) {
			content := contentOf(r)
			mu.Lock()
			first := !slices.Contains(seen, content)
			seen = append(seen, content)
			mu.Unlock()
			if content == "slow down" && first {
				w.Header().Set("Retry-After", "30")
				writeJSON(w, 429, []byte(`{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`))
				return
			}
			writeJSON(w, 200, okBody(1))
		}
		meter := NewMeter(nil, Budget{})
		opt := fastOptions()
		opt.BackoffMax = time.Minute
		c := newInProcessClient(t, h, opt, meter)
		start := time.Now()
		first := make(chan error, 1)
		go func() {
			_, err := c.Chat(t.Context(), simpleRequest("slow down"))
			first <- err
		}()
		synctest.Wait() // the first request now waits out its Retry-After
		if meter.Snapshot().Total.Retries != 1 {
			t.Fatal("the 429 was not retried")
		}
		for i := range 20 {
			if _, err := c.Chat(t.Context(), simpleRequest(fmt.Sprint("other ", i))); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("other requests waited %v (fake time) behind the 429", d)
		}
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 30*time.Second {
			t.Errorf("the 429's retry came after %v, want its Retry-After of 30s", d)
		}
		if l := c.InFlightLimit(); l != opt.MaxInFlight {
			t.Errorf("in-flight limit %d after a lone 429, want %d", l, opt.MaxInFlight)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 22 || seen[0] != "slow down" || seen[21] != "slow down" {
			t.Errorf("server saw %q; want the 429, the others, then the retry", seen)
		}
	})
}

func TestRetryAfterCappedByBackoffMax(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "3600")
			writeJSON(w, 503, []byte(`{}`))
			return
		}
		writeJSON(w, 200, okBody(1))
	})
	c := newTestClient(t, srv.endpoint(), fastOptions(), nil, nil)
	start := time.Now()
	if _, err := c.Chat(t.Context(), simpleRequest("q")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v; Retry-After should be capped at BackoffMax", d)
	}
}

// TestGoOpenAIHeaderOnError pins an undocumented go-openai behaviour:
// response headers are available even when the call fails. Chat relied on
// it while go-openai sent its requests; it now sends them itself and takes
// the headers from what captureDoer kept, on errors too (Retry-After is
// honoured: TestRetryAfterHonoured, TestRetryAfterCappedByBackoffMax).
func TestGoOpenAIHeaderOnError(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Retry-After", "7")
		writeJSON(w, 429, []byte(`{"error":{"message":"slow","code":429}}`))
	})
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = srv.URL + "/v1"
	resp, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{
		Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "q"}}})
	if err == nil {
		t.Fatal("no error")
	}
	if got := resp.Header().Get("Retry-After"); got != "7" {
		t.Errorf("Retry-After on error = %q, want 7", got)
	}
}

func TestCacheHitSendsNothing(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(2)) })
	cache := openTestCache(t)
	meter := NewMeter(map[string]Price{"m": {PromptPerMTok: 1, CompletionPerMTok: 1}}, Budget{})
	c := newTestClient(t, srv.endpoint(), fastOptions(), cache, meter)
	req := simpleRequest("q")
	req.N = 2
	first, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || first.Choices[1].Reasoning != "think 1" {
		t.Fatalf("first response: %+v", first)
	}

	// Another stage, another endpoint and key: still the same question.
	other := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 500, nil) })
	c2 := newTestClient(t, Endpoint{BaseURL: other.URL + "/v1", APIKey: "sk-other"}, fastOptions(), cache, meter)
	req.Stage = "judge"
	for _, cl := range []*Client{c, c2} {
		second, err := cl.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !second.Cached || second.Attempts != 0 || second.CostUSD != 0 {
			t.Errorf("second response not a free cache hit: %+v", second)
		}
		if !slices.Equal(first.Choices, second.Choices) {
			t.Errorf("choices differ:\n%+v\n%+v", first.Choices, second.Choices)
		}
	}
	if srv.hits.Load() != 1 || other.hits.Load() != 0 {
		t.Errorf("server hits %d and %d, want 1 and 0", srv.hits.Load(), other.hits.Load())
	}
	snap := meter.Snapshot()
	if snap.Total.Requests != 1 || snap.Total.CacheHits != 2 || snap.Stages["judge"].PromptTokens != 0 || snap.Total.PromptTokens != 10 {
		t.Errorf("meter: %+v", snap)
	}
	if n, _ := cache.Len(); n != 1 {
		t.Errorf("cache holds %d entries, want 1", n)
	}
}

func TestReasoningFieldVariants(t *testing.T) {
	bodies := map[string]string{
		"reasoning":         `{"choices":[{"index":0,"message":{"role":"assistant","content":"a","reasoning":"r1"},"finish_reason":"stop"}]}`,
		"reasoning_content": `{"choices":[{"index":0,"message":{"role":"assistant","content":"a","reasoning_content":"r1"},"finish_reason":"stop"}]}`,
		"both":              `{"choices":[{"index":0,"message":{"role":"assistant","content":"a","reasoning":"r1","reasoning_content":"old"},"finish_reason":"stop"}]}`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, []byte(body)) })
			cache := openTestCache(t)
			c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
			for range 2 {
				resp, err := c.Chat(t.Context(), simpleRequest("q"))
				if err != nil {
					t.Fatal(err)
				}
				if resp.Choices[0].Reasoning != "r1" || resp.Choices[0].Content != "a" {
					t.Errorf("cached=%v choice %+v", resp.Cached, resp.Choices[0])
				}
			}
		})
	}
}

func TestWireRequest(t *testing.T) {
	tests := []struct {
		name   string
		req    func(*Request)
		legacy bool
		check  func(t *testing.T, body map[string]any)
	}{
		{"temperature 0 is sent as a tiny nonzero", func(r *Request) { r.Temperature = ptr(0.0); r.TopP = ptr(0.0) }, false,
			func(t *testing.T, b map[string]any) {
				for _, k := range []string{"temperature", "top_p"} {
					v, ok := b[k].(float64)
					if !ok || v <= 0 || v >= 1e-5 {
						t.Errorf("%s = %v (present %v), want a tiny positive number", k, b[k], ok)
					}
				}
			}},
		{"nil sampling values are omitted", func(r *Request) {}, false,
			func(t *testing.T, b map[string]any) {
				for _, k := range []string{"temperature", "top_p", "max_completion_tokens", "max_tokens", "n", "seed", "response_format"} {
					if _, ok := b[k]; ok {
						t.Errorf("%s sent: %v", k, b[k])
					}
				}
			}},
		{"values are sent", func(r *Request) {
			r.Temperature = ptr(0.7)
			r.TopP = ptr(0.95)
			r.MaxTokens = 100
			r.N = 3
			r.Seed = ptr[int64](0)
			r.JSON = true
		}, false, func(t *testing.T, b map[string]any) {
			if math.Abs(b["temperature"].(float64)-0.7) > 1e-6 || b["max_completion_tokens"] != 100.0 || b["n"] != 3.0 || b["seed"] != 0.0 {
				t.Errorf("body %v", b)
			}
			if rf, _ := b["response_format"].(map[string]any); rf["type"] != "json_object" {
				t.Errorf("response_format %v", b["response_format"])
			}
			if _, ok := b["stage"]; ok {
				t.Error("stage sent")
			}
		}},
		{"legacy max_tokens", func(r *Request) { r.MaxTokens = 50 }, true, func(t *testing.T, b map[string]any) {
			if b["max_tokens"] != 50.0 || b["max_completion_tokens"] != nil {
				t.Errorf("body %v", b)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want int
			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(want)) })
			opt := fastOptions()
			opt.LegacyMaxTokens = tt.legacy
			c := newTestClient(t, srv.endpoint(), opt, nil, nil)
			req := simpleRequest("q")
			tt.req(&req)
			want = max(req.N, 1)
			if _, err := c.Chat(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			tt.check(t, srv.lastBody())
		})
	}
}

func TestChoicesSortedByIndex(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		writeJSON(w, 200, completionBody(1, 3,
			Choice{Index: 2, Content: "c", FinishReason: "stop"},
			Choice{Index: 1, Content: "b", FinishReason: "length"},
			Choice{Index: 0, Content: "a", FinishReason: "stop"}))
	})
	c := newTestClient(t, srv.endpoint(), fastOptions(), nil, nil)
	req := simpleRequest("q")
	req.N = 3
	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range resp.Choices {
		if ch.Index != i || ch.Content != string(rune('a'+i)) {
			t.Errorf("choice %d = %+v", i, ch)
		}
	}
	if resp.Choices[1].FinishReason != "length" {
		t.Errorf("finish reason lost: %+v", resp.Choices[1])
	}
}

func TestWrongChoiceCountIsNotCached(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	cache := openTestCache(t)
	c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
	req := simpleRequest("q")
	req.N = 2
	for range 2 {
		_, err := c.Chat(t.Context(), req)
		checkErr(t, err, ClassPermanent, []string{"choice_count"}, 200, 1)
	}
	if srv.hits.Load() != 2 {
		t.Errorf("hits %d, want 2 (a bad response must not be cached)", srv.hits.Load())
	}
	if n, _ := cache.Len(); n != 0 {
		t.Errorf("cache holds %d entries", n)
	}
}

func TestBudgetStopsLiveRequestsButServesCache(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	meter := NewMeter(nil, Budget{MaxTokens: 12})
	c := newTestClient(t, srv.endpoint(), fastOptions(), openTestCache(t), meter)
	if _, err := c.Chat(t.Context(), simpleRequest("first")); err != nil {
		t.Fatal(err)
	}
	if !meter.Exhausted() {
		t.Fatal("15 tokens did not exhaust a budget of 12")
	}
	_, err := c.Chat(t.Context(), simpleRequest("second"))
	if !errors.Is(err, ErrBudgetExhausted) || ClassOf(err) != ClassBudget {
		t.Errorf("got %v, want ErrBudgetExhausted", err)
	}
	resp, err := c.Chat(t.Context(), simpleRequest("first"))
	if err != nil || !resp.Cached {
		t.Errorf("cached answer not served: %v %+v", err, resp)
	}
	if srv.hits.Load() != 1 {
		t.Errorf("server hits %d, want 1", srv.hits.Load())
	}
	if got := meter.Snapshot().Total.ErrorsByReason["budget"]; got != 1 {
		t.Errorf("budget refusals counted %d", got)
	}

	// A restored meter carries an earlier session's spending.
	m2 := NewMeter(nil, Budget{MaxCostUSD: 1})
	m2.Restore(Snapshot{Total: StageStats{CostUSD: 1.5}})
	c2 := newTestClient(t, srv.endpoint(), fastOptions(), nil, m2)
	if _, err := c2.Chat(t.Context(), simpleRequest("third")); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("restored budget not enforced: %v", err)
	}
}

// TestAdaptiveConcurrency fills MaxInFlight, answers the whole wave with
// 429 and checks, at the server, that the next wave is at most half as
// wide and never regains the full width before recovering.
func TestAdaptiveConcurrency(t *testing.T) {
	const maxInFlight, callers = 8, 16
	var cur, peak1 atomic.Int64
	wave := make(chan struct{})
	var waveOnce sync.Once
	var mu sync.Mutex
	var later []int64 // concurrency seen by each request after the 429 wave
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		c := cur.Add(1)
		if n <= maxInFlight {
			peak1.Store(max(peak1.Load(), c))
			if n == maxInFlight {
				waveOnce.Do(func() { close(wave) })
			}
			select {
			case <-wave:
			case <-time.After(20 * time.Second):
			}
			cur.Add(-1)
			writeJSON(w, 429, []byte(`{"error":{"message":"slow down","code":429}}`))
			return
		}
		mu.Lock()
		later = append(later, c)
		mu.Unlock()
		time.Sleep(15 * time.Millisecond)
		cur.Add(-1)
		writeJSON(w, 200, okBody(1))
	})
	opt := fastOptions()
	opt.MaxInFlight = maxInFlight
	opt.MaxAttempts = 4
	c := newTestClient(t, srv.endpoint(), opt, nil, nil)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			if _, err := c.Chat(t.Context(), simpleRequest(fmt.Sprint(i))); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if peak1.Load() != maxInFlight {
		t.Errorf("first wave reached %d in flight, want %d", peak1.Load(), maxInFlight)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(later) != callers {
		t.Fatalf("%d successful requests, want %d", len(later), callers)
	}
	// Slots freed by the first 429s of the burst may go to new requests
	// before the burst is recognised, so only the second half of the
	// requests is sure to run under the lowered limit.
	if p := slices.Max(later[callers/2:]); p >= maxInFlight {
		t.Errorf("after the burst of 429s the server saw %d in flight; want < %d (%v)", p, maxInFlight, later)
	}
	if l := c.InFlightLimit(); l <= maxInFlight/2 || l > maxInFlight {
		t.Errorf("limit after recovery %d, want in (%d, %d]", l, maxInFlight/2, maxInFlight)
	}
	h := c.Health()
	if h.LimitLowered != "8 of the last 8 attempts were answered 429" || h.LimitLoweredAt.IsZero() || h.RateLimitedLastMinute != 8 {
		t.Errorf("health %+v", h)
	}
}

func TestCancellation(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	opt := fastOptions()
	opt.MaxInFlight = 1
	c := newTestClient(t, srv.endpoint(), opt, nil, nil)

	t.Run("in flight", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		before := srv.hits.Load()
		go func() { // cancel once the request is at the server
			for srv.hits.Load() == before && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		_, err := c.Chat(ctx, simpleRequest("a"))
		checkErr(t, err, ClassCanceled, []string{"canceled"}, 0, 1)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("chain lacks the context error: %v", err)
		}
		if s := c.meter.Snapshot().Total; s.Retries != 0 || s.Failures != 0 || len(s.ErrorsByReason) != 0 {
			t.Errorf("a cancellation was counted as a failure: %+v", s)
		}
	})
	t.Run("waiting for a slot", func(t *testing.T) {
		hold, cancelHold := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Chat(hold, simpleRequest("holder"))
		}()
		for {
			c.ctrl.mu.Lock()
			busy := c.ctrl.inflight == 1
			c.ctrl.mu.Unlock()
			if busy {
				break
			}
			time.Sleep(time.Millisecond)
		}
		ctx, cancel := context.WithCancel(t.Context())
		returned := make(chan error, 1)
		go func() {
			_, err := c.Chat(ctx, simpleRequest("b"))
			returned <- err
		}()
		for { // cancel once the call waits for the slot
			c.ctrl.mu.Lock()
			waiting := c.ctrl.waiters.Len() == 1
			c.ctrl.mu.Unlock()
			if waiting {
				break
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		select {
		case err := <-returned:
			checkErr(t, err, ClassCanceled, []string{"canceled"}, 0, 0)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("chain lacks context.Canceled: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Chat kept waiting for a slot after its context was canceled")
		}
		cancelHold()
		<-done
	})
	t.Run("already canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		before := srv.hits.Load()
		_, err := c.Chat(ctx, simpleRequest("c"))
		checkErr(t, err, ClassCanceled, []string{"canceled"}, 0, 0)
		if srv.hits.Load() != before {
			t.Error("a request was sent")
		}
	})
}

func TestInvalidRequests(t *testing.T) {
	c := newTestClient(t, Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, fastOptions(), nil, nil)
	msgs := []Message{{Role: "user", Content: "q"}}
	for _, req := range []Request{
		{Messages: msgs},
		{Model: "m"},
		{Model: "m", Messages: msgs, N: -1},
		{Model: "m", Messages: msgs, MaxTokens: -1},
		{Model: "m", Messages: msgs, Temperature: ptr(math.NaN())},
		{Model: "m", Messages: msgs, TopP: ptr(-0.5)},
	} {
		_, err := c.Chat(t.Context(), req)
		if !errors.Is(err, ErrInvalidRequest) || ClassOf(err) != ClassFatal {
			t.Errorf("%+v: %v", req, err)
		}
	}
}

func TestNewClientRejects(t *testing.T) {
	for _, tc := range []struct {
		ep  Endpoint
		opt Options
	}{
		{Endpoint{BaseURL: "localhost:8000/v1"}, Options{}},
		{Endpoint{BaseURL: "ftp://host/v1"}, Options{}},
		{Endpoint{BaseURL: "http:///v1"}, Options{}},
		{Endpoint{BaseURL: "http://h/v1", APIKey: "sk-a b"}, Options{}},
		{Endpoint{BaseURL: "http://h/v1", APIKey: "sk-a\n"}, Options{}},
		{Endpoint{BaseURL: "http://h/v1"}, Options{MaxInFlight: -1}},
		{Endpoint{BaseURL: "http://h/v1"}, Options{TokensPerMinute: math.NaN()}},
	} {
		_, err := NewClient(tc.ep, tc.opt, nil, nil)
		if err == nil {
			t.Errorf("%v %+v accepted", tc.ep, tc.opt)
		} else if strings.Contains(err.Error(), "sk-a") {
			t.Errorf("error shows the key: %v", err)
		}
	}
}

func TestRequestsPerMinute(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	opt := fastOptions()
	opt.RequestsPerMinute = 1200 // 20/s, burst 20
	c := newTestClient(t, srv.endpoint(), opt, nil, nil)
	start := time.Now()
	for i := range 25 {
		if _, err := c.Chat(t.Context(), simpleRequest(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("25 requests at 20/s with burst 20 took %v, want >= 200ms", d)
	}
}

func BenchmarkChat(b *testing.B) {
	body := okBody(1)
	srv := newServer(b, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, body) })
	c := newTestClient(b, srv.endpoint(), Options{}, nil, nil)
	req := simpleRequest(strings.Repeat("a fairly long prompt ", 50))
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Chat(b.Context(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Chat(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("cache-hit", func(b *testing.B) {
		cc := newTestClient(b, srv.endpoint(), Options{}, openTestCache(b), nil)
		if _, err := cc.Chat(b.Context(), req); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := cc.Chat(b.Context(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMaxResponseBytes: a body up to the cap is read whole; one byte more
// fails the request permanently, without retries.
func TestMaxResponseBytes(t *testing.T) {
	body := okBody(1)
	size := int64(len(body))
	for _, tt := range []struct {
		limit int64
		ok    bool
	}{{size + 1, true}, {size, true}, {size - 1, false}, {1, false}} {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, body) })
			opt := fastOptions()
			opt.MaxResponseBytes = tt.limit
			resp, err := newTestClient(t, srv.endpoint(), opt, nil, nil).Chat(t.Context(), simpleRequest("q"))
			if tt.ok {
				if err != nil || resp.Choices[0].Content != "answer 0" {
					t.Errorf("%v %+v", err, resp)
				}
				return
			}
			checkErr(t, err, ClassPermanent, []string{"too_large"}, 200, 1)
			if !strings.Contains(err.Error(), fmt.Sprintf("longer than %d bytes", tt.limit)) {
				t.Errorf("error does not say the cap: %v", err)
			}
		})
	}
	if _, err := NewClient(Endpoint{BaseURL: "http://h/v1"}, Options{MaxResponseBytes: -1}, nil, nil); err == nil {
		t.Error("negative MaxResponseBytes accepted")
	}
}
