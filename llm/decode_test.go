package llm

import (
	"errors"
	"testing"
)

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		n       int
		wantErr error
		check   func(t *testing.T, d decoded)
	}{
		{"minimal", `{"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, 1, nil,
			func(t *testing.T, d decoded) {
				if d.choices[0].Content != "hi" || d.promptTokens != 3 || d.completionTokens != 1 {
					t.Errorf("%+v", d)
				}
			}},
		{"null content and finish reason", `{"choices":[{"index":0,"message":{"content":null},"finish_reason":null}]}`, 1, nil,
			func(t *testing.T, d decoded) {
				if d.choices[0].Content != "" || d.choices[0].FinishReason != "" {
					t.Errorf("%+v", d)
				}
			}},
		{"missing index uses position", `{"choices":[{"message":{"content":"a"}},{"message":{"content":"b"}}]}`, 2, nil,
			func(t *testing.T, d decoded) {
				if d.choices[1].Content != "b" {
					t.Errorf("%+v", d)
				}
			}},
		{"empty reasoning falls back", `{"choices":[{"index":0,"message":{"content":"a","reasoning":"","reasoning_content":"rc"}}]}`, 1, nil,
			func(t *testing.T, d decoded) {
				if d.choices[0].Reasoning != "rc" {
					t.Errorf("%+v", d)
				}
			}},
		{"negative usage clamps", `{"choices":[{"index":0,"message":{}}],"usage":{"prompt_tokens":-5}}`, 1, nil,
			func(t *testing.T, d decoded) {
				if d.promptTokens != 0 {
					t.Errorf("%+v", d)
				}
			}},
		{"duplicate indices", `{"choices":[{"index":0,"message":{}},{"index":0,"message":{}}]}`, 2, errChoiceCount, nil},
		{"gap in indices", `{"choices":[{"index":0,"message":{}},{"index":2,"message":{}}]}`, 2, errChoiceCount, nil},
		{"too few", `{"choices":[]}`, 1, errChoiceCount, nil},
		{"no message", `{"choices":[{"index":0}]}`, 1, errMalformed, nil},
		{"no choices", `{"id":"x"}`, 1, errMalformed, nil},
		{"not JSON", `<html>`, 1, errMalformed, nil},
		{"content not a string", `{"choices":[{"index":0,"message":{"content":[1]}}]}`, 1, errMalformed, nil},
		{"trailing garbage", `{"choices":[]} x`, 0, errMalformed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decodeResponse([]byte(tt.body), tt.n)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if err == nil && tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

func TestErrorInBody(t *testing.T) {
	tests := []struct {
		body   string
		class  Class
		reason string
	}{
		{`{"error":{"message":"x","code":429}}`, ClassRetryable, "429"},
		{`{"error":{"message":"x","code":"rate_limit_exceeded"}}`, ClassRetryable, "429"},
		{`{"error":{"message":"x","code":"502"}}`, ClassRetryable, "502"},
		{`{"error":{"message":"x","code":400}}`, ClassPermanent, "error_body"},
		{`{"error":"plain text"}`, ClassPermanent, "error_body"},
	}
	for _, tt := range tests {
		_, err := decodeResponse([]byte(tt.body), 1)
		class, reason := classify(err, 200)
		if class != tt.class || reason != tt.reason {
			t.Errorf("%s: %v %q, want %v %q", tt.body, class, reason, tt.class, tt.reason)
		}
	}
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(okBody(1)), 1)
	f.Add([]byte(okBody(3)), 3)
	f.Add([]byte(`{"choices":[{"index":1,"message":{"content":"b"}},{"index":0,"message":{"content":"a"}}]}`), 2)
	f.Add([]byte(`{"error":{"code":503}}`), 1)
	f.Add([]byte(`{"choices":null}`), 0)
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		n = max(0, min(n, 64))
		d, err := decodeResponse(raw, n)
		if err != nil {
			return
		}
		if len(d.choices) != n {
			t.Fatalf("%d choices, want %d", len(d.choices), n)
		}
		for i, c := range d.choices {
			if c.Index != i {
				t.Fatalf("choice %d has index %d", i, c.Index)
			}
		}
		if d.promptTokens < 0 || d.completionTokens < 0 {
			t.Fatal("negative usage")
		}
	})
}
