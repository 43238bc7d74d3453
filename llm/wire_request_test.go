package llm

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// wireCases are requests covering every field wireRequest sets.
var wireCases = []struct {
	name   string
	req    Request
	legacy bool
}{
	{name: "plain", req: simpleRequest("What is 2+2?")},
	{name: "system, user and assistant", req: Request{Model: "Qwen/Qwen3-8B", Messages: []Message{
		{Role: "system", Content: "You grade answers."}, {Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}}},
	{name: "greedy", req: Request{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, Temperature: ptr(0.0), TopP: ptr(0.0)}},
	{name: "sampling", req: Request{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, Temperature: ptr(0.7), TopP: ptr(0.95)}},
	{name: "every field", req: Request{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, Temperature: ptr(1.3),
		TopP: ptr(1.0), MaxTokens: 4096, N: 8, Seed: ptr(int64(-42)), JSON: true}},
	{name: "legacy max_tokens", req: Request{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, MaxTokens: 512}, legacy: true},
	{name: "one choice is not sent", req: Request{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, N: 1}},
	{name: "empty content is omitted", req: Request{Model: "m", Messages: []Message{{Role: "user", Content: ""}}}},
	{name: "escapes", req: Request{Model: `m"<&>`, Messages: []Message{{Role: "user",
		Content: "<passage title=\"a & b\">\n\tcode\\n \x01 \u2028 é 数 \xff</passage>"}}}},
	{name: "big seed", req: Request{Model: "m", Messages: []Message{{Role: "user", Content: "q"}}, Seed: ptr(int64(math.MaxInt64))}},
}

// TestWireBodyMatchesGoOpenAI: the body the client writes is byte for byte
// the one go-openai's json.Marshal of the same request makes.
func TestWireBodyMatchesGoOpenAI(t *testing.T) {
	for _, tt := range wireCases {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{opt: Options{LegacyMaxTokens: tt.legacy}}
			wire := c.wireRequest(&tt.req)
			want, err := json.Marshal(wire)
			if err != nil {
				t.Fatal(err)
			}
			if got := wireBody(&wire); string(got) != string(want) {
				t.Errorf("body\n got %s\nwant %s", got, want)
			}
		})
	}
}

func FuzzWireBody(f *testing.F) {
	f.Add("m", "sys", "user <&> \"q\"\n", 0.7, 1.0, 100, 2, int64(7), true, false)
	f.Add("", "", "\xff\u2028", 0.0, 0.0, 0, 0, int64(0), false, true)
	f.Fuzz(func(t *testing.T, model, sys, user string, temp, topP float64, maxTokens, n int, seed int64, jsonMode, legacy bool) {
		req := Request{Model: model, Messages: []Message{{Role: "system", Content: sys}, {Role: "user", Content: user}},
			MaxTokens: max(maxTokens, 0), N: max(n, 0), Seed: &seed, JSON: jsonMode}
		if validFloat(&temp) {
			req.Temperature = &temp
		}
		if validFloat(&topP) {
			req.TopP = &topP
		}
		c := &Client{opt: Options{LegacyMaxTokens: legacy}}
		wire := c.wireRequest(&req)
		want, err := json.Marshal(wire)
		if err != nil {
			return // a float32 overflow to +Inf: go-openai would fail too
		}
		if got := wireBody(&wire); string(got) != string(want) {
			t.Fatalf("body\n got %s\nwant %s", got, want)
		}
	})
}

// seenRequest is what a server saw of one request.
type seenRequest struct {
	method, path                         string
	auth, accept, contentType, userAgent string
	contentLength                        int64
	body                                 string
}

// TestSentAsGoOpenAISends: the client's request, and the error it makes of
// a failed status, are those of go-openai's CreateChatCompletion.
func TestSentAsGoOpenAISends(t *testing.T) {
	replies := []struct {
		name   string
		status int
		body   string
	}{
		{"ok", 200, string(okBody(1))},
		{"openai error", 429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`},
		{"flat error", 400, `{"object":"error","message":"bad","code":400}`},
		{"not json", 502, `<html>bad gateway</html>`},
		{"error null", 500, `{"error":null}`},
	}
	for _, rep := range replies {
		t.Run(rep.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []seenRequest
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				seen = append(seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Accept"),
					r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), r.ContentLength, string(b)})
				mu.Unlock()
				writeJSON(w, rep.status, []byte(rep.body))
			}))
			defer srv.Close()
			req := wireCases[4].req
			ep := Endpoint{BaseURL: srv.URL + "/v1/", APIKey: testKey}

			cfg := openai.DefaultConfig(testKey)
			cfg.BaseURL = strings.TrimRight(ep.BaseURL, "/")
			c := newTestClient(t, ep, fastOptions(), nil, nil)
			wire := c.wireRequest(&req)
			_, wantErr := openai.NewClientWithConfig(cfg).CreateChatCompletion(t.Context(), wire)
			gotErr := c.post(t.Context(), &wire, wireBody(&wire))

			if len(seen) != 2 {
				t.Fatalf("%d requests seen, want 2", len(seen))
			}
			if seen[1] != seen[0] {
				t.Errorf("request\n got %+v\nwant %+v (go-openai)", seen[1], seen[0])
			}
			if !reflect.DeepEqual(gotErr, wantErr) {
				t.Errorf("error %#v, go-openai's %#v", gotErr, wantErr)
			}
		})
	}
}

// TestClientSideChecksAsGoOpenAI: a request go-openai refuses before
// sending is refused the same way, and nothing is sent.
func TestClientSideChecksAsGoOpenAI(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want error
	}{
		{"completions-only model", Request{Model: "text-davinci-003", Messages: []Message{{Role: "user", Content: "q"}}}, openai.ErrChatCompletionInvalidModel},
		{"reasoning model with max_tokens", Request{Model: "o1-mini", Messages: []Message{{Role: "user", Content: "q"}}, MaxTokens: 5}, openai.ErrReasoningModelMaxTokensDeprecated},
		{"reasoning model with temperature", Request{Model: "o3-mini", Messages: []Message{{Role: "user", Content: "q"}}, Temperature: ptr(0.5)}, openai.ErrReasoningModelLimitationsOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
			opt := fastOptions()
			opt.LegacyMaxTokens = true
			c := newTestClient(t, srv.endpoint(), opt, nil, nil)
			wire := c.wireRequest(&tt.req)
			cfg := openai.DefaultConfig(testKey)
			cfg.BaseURL = srv.URL + "/v1"
			_, goErr := openai.NewClientWithConfig(cfg).CreateChatCompletion(t.Context(), wire)
			_, err := c.Chat(t.Context(), tt.req)
			if !errors.Is(goErr, tt.want) || !errors.Is(err, tt.want) {
				t.Errorf("Chat: %v; go-openai: %v; want both %v", err, goErr, tt.want)
			}
			if n := srv.hits.Load(); n != 0 {
				t.Errorf("%d requests sent, want 0", n)
			}
		})
	}
}

// BenchmarkWireBody writes a grounded synthesize request's body (a 6 KB
// passage): go-openai's json.Marshal, the code before, and the client's
// own writer.
func BenchmarkWireBody(b *testing.B) {
	passage := strings.Repeat("The encoder maps each token to a vector; attention weights query-key pairs and sums values.\n", 66)
	req := Request{Model: "simulated", Messages: []Message{{Role: "system", Content: strings.Repeat("You write exam questions. ", 12)},
		{Role: "user", Content: "Write 1 question-rubric pair.\n<passage title=\"Attention\">\n" + passage + "</passage>"}},
		Temperature: ptr(0.0), MaxTokens: 4096, Seed: ptr(int64(1)), JSON: true}
	c := &Client{}
	wire := c.wireRequest(&req)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(wire); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendWire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = wireBody(&wire)
		}
	})
}
