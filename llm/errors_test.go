package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestClassification drives each error shape from the notes through a
// real HTTP exchange and checks the class, reason, attempts and what the
// server saw.
func TestClassification(t *testing.T) {
	envelope := func(status int, msg string) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, status, fmt.Appendf(nil, `{"error":{"message":%q,"type":"BadRequestError","param":null,"code":%d}}`, msg, status))
		}
	}
	flat := func(status int) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, status, fmt.Appendf(nil, `{"object":"error","message":"flat vLLM error","type":"BadRequestError","param":null,"code":%d}`, status))
		}
	}
	tests := []struct {
		name     string
		handler  func(http.ResponseWriter, *http.Request, int)
		req      func(*Request)
		opt      func(*Options)
		class    Class
		reasons  []string // any of these
		status   int
		attempts int
		hits     int64 // -1: between 1 and attempts (a timed-out request may never reach the handler)
		as       func(error) bool
	}{
		{name: "api error envelope 400", handler: envelope(400, "maximum context length exceeded"),
			class: ClassPermanent, reasons: []string{"400"}, status: 400, attempts: 1, hits: 1,
			as: func(err error) bool { var e *openai.APIError; return errors.As(err, &e) }},
		{name: "flat vLLM 400", handler: flat(400),
			class: ClassPermanent, reasons: []string{"400"}, status: 400, attempts: 1, hits: 1,
			as: func(err error) bool { var e *openai.RequestError; return errors.As(err, &e) }},
		{name: "413", handler: flat(413), class: ClassPermanent, reasons: []string{"413"}, status: 413, attempts: 1, hits: 1},
		{name: "422", handler: envelope(422, "bad schema"), class: ClassPermanent, reasons: []string{"422"}, status: 422, attempts: 1, hits: 1},
		{name: "409 other 4xx", handler: flat(409), class: ClassPermanent, reasons: []string{"409"}, status: 409, attempts: 1, hits: 1},
		{name: "401", handler: envelope(401, "bad key"), class: ClassFatal, reasons: []string{"401"}, status: 401, attempts: 1, hits: 1},
		{name: "403", handler: flat(403), class: ClassFatal, reasons: []string{"403"}, status: 403, attempts: 1, hits: 1},
		{name: "404", handler: func(w http.ResponseWriter, _ *http.Request, _ int) { http.NotFound(w, nil) },
			class: ClassFatal, reasons: []string{"404"}, status: 404, attempts: 1, hits: 1},
		{name: "429 insufficient_quota", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 429, []byte(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`))
		}, class: ClassFatal, reasons: []string{"insufficient_quota"}, status: 429, attempts: 1, hits: 1},
		{name: "429 envelope", handler: envelope(429, "slow down"), class: ClassRetryable, reasons: []string{"429"}, status: 429, attempts: 3, hits: 3},
		{name: "flat vLLM 503", handler: flat(503), class: ClassRetryable, reasons: []string{"503"}, status: 503, attempts: 3, hits: 3},
		{name: "HTML 502 from a proxy", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		}, class: ClassRetryable, reasons: []string{"502"}, status: 502, attempts: 3, hits: 3,
			as: func(err error) bool { var e *openai.RequestError; return errors.As(err, &e) }},
		{name: "truncated 200 JSON", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			b := okBody(1)
			writeJSON(w, 200, b[:len(b)/2])
		}, class: ClassRetryable, reasons: []string{"truncated"}, status: 200, attempts: 3, hits: 3},
		{name: "200 body shorter than Content-Length", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			b := okBody(1)
			w.Header().Set("Content-Length", fmt.Sprint(len(b)+100))
			w.WriteHeader(200)
			w.Write(b[:len(b)/2])
		}, class: ClassRetryable, reasons: []string{"truncated"}, status: 200, attempts: 3, hits: 3},
		{name: "200 HTML", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.WriteHeader(200)
			io.WriteString(w, "<html>hello</html>")
		}, class: ClassPermanent, reasons: []string{"malformed"}, status: 200, attempts: 1, hits: 1},
		{name: "200 JSON that is not a completion", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 200, []byte(`{"object":"list","data":[]}`))
		}, class: ClassPermanent, reasons: []string{"malformed"}, status: 200, attempts: 1, hits: 1},
		{name: "200 carrying an overload error", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 200, []byte(`{"error":{"message":"overloaded","code":503}}`))
		}, class: ClassRetryable, reasons: []string{"503"}, status: 200, attempts: 3, hits: 3},
		{name: "200 carrying a request error", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 200, []byte(`{"error":{"message":"bad","code":"invalid_request"}}`))
		}, class: ClassPermanent, reasons: []string{"error_body"}, status: 200, attempts: 1, hits: 1},
		{name: "wrong choice count", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 200, okBody(1))
		}, req: func(r *Request) { r.N = 2 }, class: ClassPermanent, reasons: []string{"choice_count"}, status: 200, attempts: 1, hits: 1},
		{name: "200 body longer than MaxResponseBytes", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 200, completionBody(1, 1, Choice{Content: strings.Repeat("x", 5000), FinishReason: "stop"}))
		}, opt: func(o *Options) { o.MaxResponseBytes = 4096 },
			class: ClassPermanent, reasons: []string{"too_large"}, status: 200, attempts: 1, hits: 1,
			as: func(err error) bool { return errors.Is(err, errTooLarge) }},
		{name: "long 503 page is still a 503", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.WriteHeader(503)
			io.WriteString(w, strings.Repeat("<p>busy</p>", 1000))
		}, opt: func(o *Options) { o.MaxResponseBytes = 4096 },
			class: ClassRetryable, reasons: []string{"503"}, status: 503, attempts: 3, hits: 3},
		{name: "per-attempt timeout, hung handler", handler: func(w http.ResponseWriter, r *http.Request, _ int) {
			<-r.Context().Done()
		}, opt: func(o *Options) { o.AttemptTimeout = 100 * time.Millisecond; o.MaxAttempts = 2 },
			class: ClassRetryable, reasons: []string{"timeout"}, attempts: 2, hits: -1,
			as: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{name: "per-attempt timeout, hung mid-body", handler: func(w http.ResponseWriter, r *http.Request, _ int) {
			w.WriteHeader(200)
			w.Write(okBody(1)[:20])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, opt: func(o *Options) { o.AttemptTimeout = 100 * time.Millisecond; o.MaxAttempts = 2 },
			class: ClassRetryable, reasons: []string{"timeout"}, attempts: 2, hits: -1,
			as: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{name: "connection reset", handler: func(w http.ResponseWriter, _ *http.Request, _ int) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}, class: ClassRetryable, reasons: []string{"reset", "truncated", "network"}, attempts: 3, hits: 3},
		{name: "client-side validation sentinel", handler: flat(500),
			req:   func(r *Request) { r.Model = "o1-mini"; r.MaxTokens = 10 },
			opt:   func(o *Options) { o.LegacyMaxTokens = true },
			class: ClassFatal, reasons: []string{"client"}, attempts: 1, hits: 0,
			as: func(err error) bool { return errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handler)
			opt := fastOptions()
			if tt.opt != nil {
				tt.opt(&opt)
			}
			meter := NewMeter(nil, Budget{})
			c := newTestClient(t, srv.endpoint(), opt, nil, meter)
			req := simpleRequest("q")
			if tt.req != nil {
				tt.req(&req)
			}
			_, err := c.Chat(t.Context(), req)
			checkErr(t, err, tt.class, tt.reasons, tt.status, tt.attempts)
			if got := srv.hits.Load(); got != tt.hits && (tt.hits != -1 || got < 1 || got > int64(tt.attempts)) {
				t.Errorf("server saw %d requests, want %d", got, tt.hits)
			}
			if tt.as != nil && !tt.as(err) {
				t.Errorf("error chain lacks the expected type or sentinel: %v", err)
			}
			s := meter.Snapshot().Stages["rollout"]
			if s.Failures != 1 || s.Retries != int64(tt.attempts-1) {
				t.Errorf("meter: failures %d retries %d, want 1 and %d", s.Failures, s.Retries, tt.attempts-1)
			}
			if strings.Contains(err.Error(), "SECRET123") {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
}

func checkErr(t *testing.T, err error, class Class, reasons []string, status, attempts int) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *Error", err, err)
	}
	if e.Class != class || ClassOf(err) != class {
		t.Errorf("class %v (ClassOf %v), want %v; err: %v", e.Class, ClassOf(err), class, err)
	}
	ok := false
	for _, r := range reasons {
		ok = ok || e.Reason == r
	}
	if !ok {
		t.Errorf("reason %q, want one of %q; err: %v", e.Reason, reasons, err)
	}
	if status != 0 && e.Status != status {
		t.Errorf("status %d, want %d", e.Status, status)
	}
	if e.Attempts != attempts {
		t.Errorf("attempts %d, want %d", e.Attempts, attempts)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newTestClient(t, Endpoint{BaseURL: "http://" + addr + "/v1"}, fastOptions(), nil, nil)
	_, err = c.Chat(t.Context(), simpleRequest("q"))
	checkErr(t, err, ClassRetryable, []string{"refused"}, 0, 3)
}

func TestClassOfPlainErrors(t *testing.T) {
	tests := []struct {
		err  error
		want Class
	}{
		{nil, 0},
		{context.Canceled, ClassCanceled},
		{fmt.Errorf("x: %w", ErrBudgetExhausted), ClassBudget},
		{io.ErrUnexpectedEOF, ClassRetryable},
		{&openai.APIError{HTTPStatusCode: 429}, ClassRetryable},
		{&openai.RequestError{HTTPStatusCode: 400}, ClassPermanent},
		{&openai.RequestError{HTTPStatusCode: 401}, ClassFatal},
		{&openai.RequestError{HTTPStatusCode: 520}, ClassRetryable},
		{&openai.RequestError{HTTPStatusCode: 501}, ClassFatal},
		{openai.ErrChatCompletionInvalidModel, ClassFatal},
		{fmt.Errorf("%w: no model", ErrInvalidRequest), ClassFatal},
		{&Error{Class: ClassPermanent}, ClassPermanent},
		{fmt.Errorf("wrapped: %w", &Error{Class: ClassCanceled}), ClassCanceled},
	}
	for _, tt := range tests {
		if got := ClassOf(tt.err); got != tt.want {
			t.Errorf("ClassOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := redactor{key: testKey}
	tests := []struct{ in, mustNot string }{
		{"Authorization: Bearer " + testKey, "SECRET123"},
		{`{"headers":{"Authorization":"Bearer abc.def-ghi"}}`, "abc.def-ghi"},
		{"key was " + testKey + "!", "SECRET123"},
		{"other key sk-proj-ABCDEFGHIJ", "ABCDEFGHIJ"},
	}
	for _, tt := range tests {
		if got := r.redact(tt.in); strings.Contains(got, tt.mustNot) {
			t.Errorf("redact(%q) = %q", tt.in, got)
		}
	}
	if got := r.redact("<p>Bearer " + testKey + "</p>"); got != "<p>Bearer [REDACTED]</p>" {
		t.Errorf("redacted HTML = %q", got)
	}
	long := strings.Repeat("é", 400)
	ex := r.excerpt([]byte(long))
	if len(ex) > excerptLen+len("…") || !strings.HasSuffix(ex, "…") {
		t.Errorf("excerpt of %d bytes: %d bytes", len(long), len(ex))
	}
	if !strings.HasPrefix(ex, "é") || strings.ContainsRune(ex, '\uFFFD') {
		t.Errorf("excerpt split a rune: %q", ex[len(ex)-8:])
	}
}

// TestNoSecretInErrorsOrLogs uses servers that echo the Authorization
// header back in every error shape, and checks errors, their chains,
// fmt verbs and debug logs.
func TestNoSecretInErrorsOrLogs(t *testing.T) {
	shapes := []func(w http.ResponseWriter, auth string){
		func(w http.ResponseWriter, auth string) {
			writeJSON(w, 401, fmt.Appendf(nil, `{"error":{"message":"bad header %s","type":"auth","param":%q,"code":%q}}`, auth, auth, auth))
		},
		func(w http.ResponseWriter, auth string) {
			writeJSON(w, 400, fmt.Appendf(nil, `{"object":"error","message":"you sent %s","code":400}`, auth))
		},
		func(w http.ResponseWriter, auth string) {
			w.WriteHeader(502)
			fmt.Fprintf(w, "<html>upstream saw %s</html>", auth)
		},
		func(w http.ResponseWriter, auth string) {
			writeJSON(w, 200, fmt.Appendf(nil, `{"echo":%q}`, auth))
		},
		func(w http.ResponseWriter, auth string) {
			writeJSON(w, 200, fmt.Appendf(nil, `{"error":{"message":"rate limited for %s","code":429}}`, auth))
		},
	}
	for i, shape := range shapes {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var sawAuth bool
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				auth := r.Header.Get("Authorization")
				sawAuth = strings.Contains(auth, testKey)
				shape(w, auth)
			})
			var logs logBuffer
			opt := fastOptions()
			opt.Logger = logs.logger()
			c := newTestClient(t, srv.endpoint(), opt, nil, nil)
			_, err := c.Chat(t.Context(), simpleRequest("q"))
			if err == nil {
				t.Fatal("no error")
			}
			if !sawAuth {
				t.Fatal("server did not receive the key; the test proves nothing")
			}
			texts := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), logs.String()}
			for e := err; e != nil; e = errors.Unwrap(e) {
				texts = append(texts, e.Error())
			}
			var re *openai.RequestError
			if errors.As(err, &re) {
				texts = append(texts, string(re.Body))
			}
			var ae *openai.APIError
			if errors.As(err, &ae) {
				texts = append(texts, ae.Message, fmt.Sprint(ae.Code))
				if ae.Param != nil {
					texts = append(texts, *ae.Param)
				}
			}
			for _, s := range texts {
				if strings.Contains(s, "SECRET123") {
					t.Errorf("key leaked: %s", s)
				}
			}
		})
	}
}

func TestEndpointNeverPrintsKey(t *testing.T) {
	ep := Endpoint{BaseURL: "https://user:pw@api.example.com/v1", APIKey: testKey}
	var logs logBuffer
	logs.logger().Info("endpoint", "ep", ep)
	for _, s := range []string{
		fmt.Sprint(ep), fmt.Sprintf("%v %+v %#v %s %q %d %x", ep, ep, ep, ep, ep, ep, ep),
		fmt.Sprintf("%v", &ep), logs.String(),
	} {
		if strings.Contains(s, "SECRET123") || strings.Contains(s, "pw@") {
			t.Errorf("leak: %s", s)
		}
		if !strings.Contains(s, "api.example.com") {
			t.Errorf("base URL missing: %s", s)
		}
	}
}
