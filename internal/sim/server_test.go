package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

func newClient(baseURL string) *openai.Client {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = baseURL
	cfg.HTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	return openai.NewClientWithConfig(cfg)
}

func openaiMessages(msgs []prompts.Message) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		out[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	return out
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	s := New(Config{Answers: testProblems()})
	for kind, msgs := range renderedPrompts(t) {
		t.Run(string(kind), func(t *testing.T) {
			req := seeded(msgs, 42, 3)
			_, a := call(t, s, req)
			_, b := call(t, s, req)
			if !bytes.Equal(a, b) {
				t.Fatalf("same request, different bodies:\n%s\n%s", a, b)
			}
			// Field order and spacing do not matter.
			var generic map[string]any
			if err := json.Unmarshal(must(json.Marshal(req)), &generic); err != nil {
				t.Fatal(err)
			}
			spaced := must(json.MarshalIndent(generic, "", "    "))
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(spaced)))
			if !bytes.Equal(rec.Body.Bytes(), a) {
				t.Fatalf("re-encoded request, different body")
			}
			// Another server with the same config answers the same.
			_, c := call(t, New(Config{Answers: testProblems()}), req)
			if !bytes.Equal(a, c) {
				t.Fatalf("second server, different body")
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestSamplesDiffer(t *testing.T) {
	t.Parallel()
	s := New(Config{Answers: testProblems()})
	msgs := renderedPrompts(t)[KindRollout]
	const n = 8
	reversed, inOrder := 0, 0
	for seed := range int64(40) {
		resp := complete(t, s, seeded(msgs, seed, n))
		indexes := map[int]bool{}
		contents := map[string]bool{}
		for _, c := range resp.Choices {
			indexes[c.Index] = true
			contents[c.Message.Content] = true
		}
		if len(indexes) != n || !indexes[0] || !indexes[n-1] {
			t.Fatalf("indexes %v", indexes)
		}
		if len(contents) < n-1 {
			t.Fatalf("only %d distinct samples of %d", len(contents), n)
		}
		if resp.Choices[0].Index == n-1 {
			reversed++
		} else {
			inOrder++
		}
	}
	if reversed == 0 || inOrder == 0 {
		t.Errorf("choice order: %d reversed, %d in order; want both", reversed, inOrder)
	}
	// n=1 requests with different seeds are different samples too.
	a := complete(t, s, seeded(msgs, 1, 1)).Choices[0].Message.Content
	b := complete(t, s, seeded(msgs, 2, 1)).Choices[0].Message.Content
	if a == b {
		t.Error("seeds 1 and 2 gave the same sample")
	}
}

func TestMaxTokens(t *testing.T) {
	t.Parallel()
	s := New(Config{Answers: testProblems(), LengthRate: -1})
	req := seeded(renderedPrompts(t)[KindRollout], 1, 1)
	req.MaxTokens = 10
	c := complete(t, s, req).Choices[0]
	if c.FinishReason != "length" || len(c.Message.Content) > 40 {
		t.Errorf("finish %q, %d bytes; want length and at most 40 bytes", c.FinishReason, len(c.Message.Content))
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := New(Config{KeepLog: true})
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     any
	}{
		{"unknown prompt", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Write a haiku."}]}`, 400, "unrecognized_prompt"},
		{"bad JSON", "POST", "/v1/chat/completions", `{"model":`, 400, nil},
		{"stream", "POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, 400, nil},
		{"no model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400, nil},
		{"n too big", "POST", "/v1/chat/completions", `{"model":"m","n":100000,"messages":[{"role":"user","content":"x"}]}`, 400, nil},
		{"GET completions", "GET", "/v1/chat/completions", ``, 405, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body)))
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			var env struct {
				Error struct {
					Message string `json:"message"`
					Code    any    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Message == "" {
				t.Fatalf("not an OpenAI error envelope (%v): %s", err, rec.Body)
			}
			if tt.code != nil && env.Error.Code != tt.code {
				t.Errorf("code %v, want %v", env.Error.Code, tt.code)
			}
		})
	}
	if got := s.Count(); got != 5 {
		t.Errorf("Count = %d, want 5 chat-completions requests", got)
	}
	if log := s.Log(); len(log) != 5 || log[0].Kind != KindUnknown || log[0].Status != 400 {
		t.Errorf("log %+v", log)
	}
}

// TestRoutes: only /v1/chat/completions and /v1/models exist; anything
// else, such as a base URL without /v1, gets vLLM's 404.
func TestRoutes(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	chat := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	tests := []struct {
		name, method, path, body string
		status                   int
		want                     string // a part of the body
	}{
		{"models", "GET", "/v1/models", ``, 200, `"id":"simulated"`},
		{"chat", "POST", "/v1/chat/completions", chat, 400, `unrecognized_prompt`},
		{"chat without /v1", "POST", "/chat/completions", chat, 404, `{"detail":"Not Found"}`},
		{"models without /v1", "GET", "/models", ``, 404, `{"detail":"Not Found"}`},
		{"another prefix", "POST", "/api/v1/chat/completions", chat, 404, `{"detail":"Not Found"}`},
		{"embeddings", "POST", "/v1/embeddings", `{}`, 404, `{"detail":"Not Found"}`},
		{"root", "GET", "/", ``, 404, `{"detail":"Not Found"}`},
		{"POST models", "POST", "/v1/models", `{}`, 405, `Method Not Allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body)))
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("%s %s: %d %s, want %d with %s", tt.method, tt.path, rec.Code, rec.Body, tt.status, tt.want)
			}
		})
	}
	if got := s.Count(); got != 1 {
		t.Errorf("Count = %d, want 1: only /v1/chat/completions counts", got)
	}
}

func TestLog(t *testing.T) {
	t.Parallel()
	rendered := renderedPrompts(t)
	for _, keep := range []bool{true, false} {
		s := New(Config{KeepLog: keep})
		for _, k := range []Kind{KindRollout, KindSatisfy, KindJudgeBatch} {
			complete(t, s, seeded(rendered[k], 1, 2))
		}
		if s.Count() != 3 {
			t.Fatalf("Count = %d", s.Count())
		}
		log := s.Log()
		if !keep {
			if len(log) != 0 {
				t.Fatalf("KeepLog off but %d entries", len(log))
			}
			continue
		}
		if len(log) != 3 || log[0].Kind != KindRollout || log[1].Kind != KindSatisfy || log[2].N != 2 ||
			log[0].Status != 200 || log[0].Hash == 0 || log[0].Time.IsZero() || log[0].Hash == log[1].Hash {
			t.Fatalf("log %+v", log)
		}
	}
}

func TestFaultRates(t *testing.T) {
	t.Parallel()
	f := Faults{RateLimited: 0.05, ServerError: 0.1, Hang: 0.02, Truncate: 0.03, Malformed: 0.2}
	s := New(Config{Faults: f})
	counts := map[FaultKind]int{}
	const draws = 40000
	for i := range uint64(draws) {
		counts[s.fault(i%50, i+1)]++ // few distinct requests: retries must see other outcomes
	}
	for kind, want := range map[FaultKind]float64{FaultRateLimited: 0.05, FaultServerError: 0.1, FaultHang: 0.02,
		FaultTruncate: 0.03, FaultMalformed: 0.2, FaultNone: 0.6} {
		got := float64(counts[kind]) / draws
		if math.Abs(got-want) > 0.1*want+0.003 {
			t.Errorf("%q: rate %.4f, want %.3f", kind, got, want)
		}
	}
	spread := SpreadFaults(0.1)
	if spread.Total() < 0.0999 || spread.Total() > 0.1001 || spread.Hang != 0.02 {
		t.Errorf("SpreadFaults(0.1) = %+v", spread)
	}
	if over := New(Config{Faults: SpreadFaults(3)}).cfg.Faults; math.Abs(over.Total()-1) > 1e-9 {
		t.Errorf("rates over 1 not scaled: total %v", over.Total())
	}
}

// TestFaultsSeenByClient checks that a real go-openai client observes every
// fault kind the way a real server's would look.
func TestFaultsSeenByClient(t *testing.T) {
	msgs := openaiMessages(renderedPrompts(t)[KindJudgeBatch])
	tests := []struct {
		name    string
		faults  Faults
		timeout time.Duration // the client's deadline; 5s when zero
		check   func(t *testing.T, resp openai.ChatCompletionResponse, err error, elapsed time.Duration)
	}{
		{"429", Faults{RateLimited: 1, RetryAfter: 2 * time.Second}, 0, func(t *testing.T, resp openai.ChatCompletionResponse, err error, _ time.Duration) {
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 429 {
				t.Fatalf("err = %v, want an APIError with status 429", err)
			}
			if got := resp.Header().Get("Retry-After"); got != "2" {
				t.Errorf("Retry-After %q, want 2", got)
			}
		}},
		{"500", Faults{ServerError: 1}, 0, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 {
				t.Fatalf("err = %v, want an APIError with status 500", err)
			}
		}},
		{"truncate", Faults{Truncate: 1}, 0, func(t *testing.T, _ openai.ChatCompletionResponse, err error, _ time.Duration) {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
			}
		}},
		{"hang", Faults{Hang: 1}, 200 * time.Millisecond, func(t *testing.T, _ openai.ChatCompletionResponse, err error, elapsed time.Duration) {
			if !errors.Is(err, context.DeadlineExceeded) || elapsed < 150*time.Millisecond {
				t.Fatalf("err = %v after %v, want the client's deadline", err, elapsed)
			}
		}},
		{"hang capped", Faults{Hang: 1, HangMax: 20 * time.Millisecond}, 0, func(t *testing.T, _ openai.ChatCompletionResponse, err error, elapsed time.Duration) {
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v after %v, want a dropped connection before the deadline", err, elapsed)
			}
		}},
		{"malformed", Faults{Malformed: 1}, 0, func(t *testing.T, resp openai.ChatCompletionResponse, err error, _ time.Duration) {
			if err != nil {
				t.Fatal(err)
			}
			if _, perr := schema.ParseValidityBatch(resp.Choices[0].Message.Content, []int32{1, 2, 3}); perr == nil {
				t.Fatalf("malformed reply parsed:\n%s", resp.Choices[0].Message.Content)
			}
		}},
		{"none", Faults{}, 0, func(t *testing.T, resp openai.ChatCompletionResponse, err error, _ time.Duration) {
			if err != nil {
				t.Fatal(err)
			}
			if _, perr := schema.ParseValidityBatch(resp.Choices[0].Message.Content, []int32{1, 2, 3}); perr != nil {
				t.Fatal(perr)
			}
		}},
	}
	for _, transport := range []string{"loopback", "in-process"} {
		for _, tt := range tests {
			t.Run(transport+"/"+tt.name, func(t *testing.T) {
				cfg := Config{Faults: tt.faults, KeepLog: true}
				var s *Server
				var client *openai.Client
				if transport == "loopback" {
					var url string
					var stop func()
					var err error
					if s, url, stop, err = Start(cfg); err != nil {
						t.Fatal(err)
					}
					defer stop()
					client = newClient(url)
				} else {
					s = New(cfg)
					defer s.Close()
					oc := openai.DefaultConfig("")
					oc.BaseURL = "http://sim.invalid/v1"
					oc.HTTPClient = &http.Client{Transport: s.Transport()}
					client = openai.NewClientWithConfig(oc)
				}
				timeout := tt.timeout
				if timeout == 0 {
					timeout = time.Minute // a guard against a hang: the cases end long before it
				}
				ctx, cancel := context.WithTimeout(t.Context(), timeout)
				defer cancel()
				start := time.Now()
				resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "sim", Messages: msgs})
				tt.check(t, resp, err, time.Since(start))
				if log := s.Log(); len(log) != 1 || log[0].Kind != KindJudgeBatch {
					t.Errorf("log %+v", log)
				}
			})
		}
	}
}

// TestRetrySucceeds checks that faults are drawn per attempt: resending the
// same request eventually gets through, with the same content every time.
func TestRetrySucceeds(t *testing.T) {
	t.Parallel()
	_, url, stop, err := Start(Config{Faults: Faults{RateLimited: 0.3, ServerError: 0.3, Truncate: 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := newClient(url)
	seed := 5
	req := openai.ChatCompletionRequest{Model: "sim", Seed: &seed, Messages: openaiMessages(renderedPrompts(t)[KindSatisfy])}
	var contents []string
	for attempt := 0; attempt < 200 && len(contents) < 3; attempt++ {
		resp, err := client.CreateChatCompletion(t.Context(), req)
		if err == nil {
			contents = append(contents, resp.Choices[0].Message.Content)
		}
	}
	if len(contents) < 3 {
		t.Fatalf("only %d successes in 200 attempts at a 20%% success rate", len(contents))
	}
	if contents[0] != contents[1] || contents[1] != contents[2] {
		t.Errorf("successful retries differ")
	}
}

func TestModelsEndpoint(t *testing.T) {
	t.Parallel()
	_, url, stop, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	models, err := newClient(url).ListModels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Models) != 1 || models.Models[0].ID != "simulated" || models.Models[0].OwnedBy != "rubricforge-llmtest (simulated)" {
		t.Errorf("models %+v", models.Models)
	}
}

func TestLatencyAndClose(t *testing.T) {
	msgs := openaiMessages(renderedPrompts(t)[KindJudgeItem])
	t.Run("latency respects the request context", func(t *testing.T) {
		_, url, stop, err := Start(Config{Latency: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = newClient(url).CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "sim", Messages: msgs})
		// Waiting out the latency takes at least the latency (a timer never
		// fires early): the bound fails the bug, never a busy machine.
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) >= 10*time.Second {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
	})
	t.Run("stop ends hung requests", func(t *testing.T) {
		srv, url, stop, err := Start(Config{Faults: Faults{Hang: 1}})
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := newClient(url).CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "sim", Messages: msgs})
			errc <- err
		}()
		for srv.Count() == 0 { // the request has reached the server, which holds it
			runtime.Gosched()
		}
		start := time.Now()
		stop()
		// Holding a hung request to its end takes HangMax (default 30s); a
		// stop that ends it takes far less, however busy the machine.
		if d := time.Since(start); d >= 30*time.Second {
			t.Errorf("stop took %v, the hung request's HangMax", d)
		}
		var apiErr *openai.APIError
		if err := <-errc; !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusServiceUnavailable {
			t.Errorf("hung request ended with %v, want 503", err)
		}
	})
}

// TestConcurrentLatency runs 512 requests at 20ms latency in process under
// a fake clock: if the sleeps overlap, the fake time that passes is one
// latency (at most 30ms), however slow or busy the machine; a lock held
// while sleeping would make it about 10s.
func TestConcurrentLatency(t *testing.T) {
	const workers = 256
	bodies := rolloutBodies(t, workers)
	// Goroutines waiting on a mutex do not let fake time pass, so a lock held
	// while sleeping shows up as no progress at all.
	watchdog := time.AfterFunc(30*time.Second, func() {
		panic("TestConcurrentLatency: no progress in 30s; is a lock held while a request sleeps?")
	})
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Answers: testProblems(), Latency: 20 * time.Millisecond})
		start := time.Now()
		var wg sync.WaitGroup
		codes := make([]int, workers)
		for i := range workers {
			wg.Go(func() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(bodies[i])))
				codes[i] = rec.Code
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		for i, c := range codes {
			if c != http.StatusOK {
				t.Fatalf("request %d: status %d", i, c)
			}
		}
		if elapsed < 10*time.Millisecond || elapsed > 30*time.Millisecond {
			t.Errorf("512 requests at 20ms latency took %v of fake time, want 10-30ms (concurrent sleeps)", elapsed)
		}
	})
}

// TestConcurrency is TestConcurrentLatency over HTTP: 64 requests at
// 20ms latency sent at once through net/http's client and server (over an
// in-memory network, under a fake clock): if the sleeps overlap, the fake
// time that passes is one latency (at most 30ms), however slow or busy the
// machine; serialized sleeps would make it about 1.3s (and sleeps two or
// more at a time but not all of them at least 40ms), and a lock held while
// sleeping no progress at all (the watchdog). TestConcurrentLatency sends
// 512 in process.
func TestConcurrency(t *testing.T) {
	const workers = 64
	bodies := rolloutBodies(t, workers)
	watchdog := time.AfterFunc(30*time.Second, func() {
		panic("TestConcurrency: no progress in 30s; is a lock held while a request sleeps?")
	})
	defer watchdog.Stop()
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{Answers: testProblems(), Latency: 20 * time.Millisecond})
		network := newPipeNet()
		hs := &http.Server{Handler: s}
		served := make(chan error, 1)
		go func() { served <- hs.Serve(network) }()
		transport := &http.Transport{DialContext: network.Dial, MaxIdleConnsPerHost: workers}
		client := &http.Client{Transport: transport}
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for i := range workers {
			wg.Go(func() {
				resp, err := client.Post("http://sim/v1/chat/completions", "application/json", bytes.NewReader(bodies[i]))
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("request %d: status %d, %v", i, resp.StatusCode, err)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		transport.CloseIdleConnections()
		if err := hs.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serving: %v", err)
		}
		if s.Count() != workers {
			t.Errorf("Count = %d, want %d", s.Count(), workers)
		}
		if elapsed < 10*time.Millisecond || elapsed > 30*time.Millisecond {
			t.Errorf("%d requests over HTTP at 20ms latency took %v of fake time, want 10-30ms (concurrent sleeps)", workers, elapsed)
		}
	})
}

func TestLoadAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name    string
		text    string
		want    map[string]string
		wantErr bool
	}{
		{"strings and numbers", `{"problem": " What is 1+1? ", "answer": "2"}` + "\n\n" +
			`{"problem": "Half of 1?", "answer": 0.5, "source": "x"}` + "\n" +
			`{"problem": "no answer"}` + "\n" + `{"answer": "no problem"}` + "\n" +
			`{"problem": "What is 1+1?", "answer": "3"}`,
			map[string]string{"What is 1+1?": "2", "Half of 1?": "0.5"}, false},
		{"bad line", `{"problem": "a", "answer": "b"}` + "\n{oops", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".jsonl")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadAnswers(path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := LoadAnswers(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzHandler(f *testing.F) {
	for _, msgs := range renderedPrompts(f) {
		f.Add(must(json.Marshal(seeded(msgs, 1, 2))))
	}
	f.Add([]byte(`{"model":"m","n":-1,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"<problem>x</problem> ### Step <answer>"}]}`))
	s := New(Config{Answers: testProblems()})
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
		switch rec.Code {
		case http.StatusOK:
			var resp chatResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Choices) == 0 {
				t.Fatalf("200 with an unusable body (%v): %s", err, rec.Body)
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("status %d", rec.Code)
		}
	})
}

// rolloutBodies is n rollout requests that differ by seed.
func rolloutBodies(t *testing.T, n int) [][]byte {
	t.Helper()
	msgs := renderedPrompts(t)[KindRollout]
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = must(json.Marshal(seeded(msgs, int64(i), 1)))
	}
	return bodies
}

// TestFaultsByRequest: with FaultsByRequest the faults a workload meets
// do not depend on the order its requests arrive in: two servers sent the
// same requests in opposite orders inject the same faults into each.
func TestFaultsByRequest(t *testing.T) {
	t.Parallel()
	cfg := Config{Seed: 3, Faults: Faults{ServerError: 0.3, Malformed: 0.2}, FaultsByRequest: true, KeepLog: true}
	bodies := rolloutBodies(t, 40)
	faults := func(order []int) map[string][]FaultKind {
		srv := New(cfg)
		for _, i := range order {
			for range 3 { // three attempts of each request
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(bodies[i]))
				srv.ServeHTTP(httptest.NewRecorder(), req)
			}
		}
		out := map[string][]FaultKind{}
		for _, e := range srv.Log() {
			k := fmt.Sprint(e.Hash)
			out[k] = append(out[k], e.Fault)
		}
		return out
	}
	forward, backward := make([]int, len(bodies)), make([]int, len(bodies))
	for i := range bodies {
		forward[i], backward[i] = i, len(bodies)-1-i
	}
	a, b := faults(forward), faults(backward)
	if fmt.Sprint(a) != fmt.Sprint(b) { // maps print sorted by key
		t.Errorf("the faults depend on the order of arrival:\n%v\n%v", a, b)
	}
	var n int
	for _, fs := range a {
		for _, f := range fs {
			if f != FaultNone {
				n++
			}
		}
	}
	if n == 0 {
		t.Error("no fault injected")
	}
}

// TestContextTokens: a prompt plus max_tokens over Config.ContextTokens is
// refused with vLLM's 400; one that fits is answered.
func TestContextTokens(t *testing.T) {
	t.Parallel()
	s := New(Config{Answers: testProblems(), ContextTokens: 300})
	req := seeded(renderedPrompts(t)[KindRollout], 1, 1)
	for _, tc := range []struct {
		maxTokens int
		status    int
	}{{0, 200}, {50, 200}, {100_000, 400}} {
		req.MaxTokens = tc.maxTokens
		body, _ := json.Marshal(req)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body)))
		if rec.Code != tc.status {
			t.Errorf("max_tokens %d: status %d, want %d: %s", tc.maxTokens, rec.Code, tc.status, rec.Body)
		}
		if tc.status == 400 && !strings.Contains(rec.Body.String(), "maximum context length is 300 tokens") {
			t.Errorf("max_tokens %d: %s", tc.maxTokens, rec.Body)
		}
	}
}
