package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/llm/cache"
)

const testKey = "sk-SECRET123"

// wireChoiceJSON is a choice as a test server sends it.
type wireChoiceJSON struct {
	Index   int `json:"index"`
	Message struct {
		Role             string  `json:"role"`
		Content          *string `json:"content"`
		Reasoning        *string `json:"reasoning,omitempty"`
		ReasoningContent *string `json:"reasoning_content,omitempty"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

// completionBody renders a chat completion with the given choices, in the
// given order.
func completionBody(prompt, completion int64, choices ...Choice) []byte {
	cs := make([]wireChoiceJSON, len(choices))
	for i, c := range choices {
		cs[i].Index = c.Index
		cs[i].Message.Role = "assistant"
		content := c.Content
		cs[i].Message.Content = &content
		if c.Reasoning != "" {
			r := c.Reasoning
			cs[i].Message.Reasoning = &r
		}
		cs[i].FinishReason = c.FinishReason
	}
	b, err := json.Marshal(map[string]any{
		"id":      "chatcmpl-test",
		"object":  "chat.completion",
		"created": 1,
		"model":   "m",
		"choices": cs,
		"usage":   map[string]int64{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// okBody answers with n choices "answer i", reasoning "think i".
func okBody(n int) []byte {
	cs := make([]Choice, n)
	for i := range cs {
		cs[i] = Choice{Index: i, Content: "answer " + strconv.Itoa(i), Reasoning: "think " + strconv.Itoa(i), FinishReason: "stop"}
	}
	return completionBody(10, int64(5*n), cs...)
}

// server is a test endpoint counting requests and keeping their bodies.
type server struct {
	*httptest.Server
	hits   atomic.Int64
	mu     sync.Mutex
	bodies []map[string]any
	times  []time.Time
}

// newServer starts a server whose handler gets the 1-based request number.
func newServer(t testing.TB, h func(w http.ResponseWriter, r *http.Request, n int)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		s.mu.Lock()
		s.bodies = append(s.bodies, m)
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		h(w, r, int(s.hits.Add(1)))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) endpoint() Endpoint { return Endpoint{BaseURL: s.URL + "/v1", APIKey: testKey} }

func (s *server) lastBody() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[len(s.bodies)-1]
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// fastOptions keep retries quick.
func fastOptions() Options {
	return Options{MaxInFlight: 8, MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: 20 * time.Millisecond, AttemptTimeout: 5 * time.Second}
}

func newTestClient(t testing.TB, ep Endpoint, opt Options, responses *cache.Cache, meter *Meter) *Client {
	t.Helper()
	c, err := NewClient(ep, opt, responses, meter)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func openTestCache(t testing.TB) *cache.Cache {
	t.Helper()
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// openCache opens the cache at path with a logger into logs (when not nil).
func openCache(t testing.TB, path string, logs *logBuffer, opts ...cache.Option) *cache.Cache {
	t.Helper()
	if logs != nil {
		opts = append(opts, cache.WithLogger(logs.logger()))
	}
	c, err := cache.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collidingID has id's key and another request's digest: what a 64-bit
// collision looks like to the cache.
func collidingID(id cache.Identity, other string) cache.Identity {
	return cache.Identity{Key: id.Key, Digest: sha256.Sum256([]byte(other))}
}

func simpleRequest(content string) Request {
	return Request{Stage: "rollout", Model: "m", Messages: []Message{{Role: "user", Content: content}}}
}

// logBuffer is a concurrency-safe buffer for a debug-level slog logger.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func ptr[T any](v T) *T { return &v }

// inProcess answers requests with a handler in this process, without a
// socket, so that a client can run inside a synctest bubble. A handler
// that returns after the request's context ended (a hung request given
// up) yields the context's error, as a transport would.
type inProcess func(w http.ResponseWriter, r *http.Request)

func (h inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	h(rec, req)
	if req.Body != nil {
		req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// newInProcessClient is a client of h through inProcess.
func newInProcessClient(t testing.TB, h inProcess, opt Options, meter *Meter) *Client {
	t.Helper()
	opt.HTTPClient = &http.Client{Transport: h}
	return newTestClient(t, Endpoint{BaseURL: "http://in-process.test/v1", APIKey: testKey}, opt, nil, meter)
}

// contentOf is the last message's content of a chat request.
func contentOf(r *http.Request) string {
	var body struct {
		Messages []Message `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
		return ""
	}
	return body.Messages[len(body.Messages)-1].Content
}

// hold waits for d, or until the request is given up.
func hold(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}
