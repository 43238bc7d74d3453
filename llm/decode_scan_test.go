package llm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestScanResponse: the usual body is decoded by the scan to what
// encoding/json decodes it to, and a body it is not sure of is left to
// encoding/json.
func TestScanResponse(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		usual bool
	}{
		{"simulated endpoint's reply", string(okBody(2)), true},
		{"vLLM reply with extra fields", `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":"{\"a\": \"b\\n\u00e9\"}","reasoning":null,"tool_calls":[]},` +
			`"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":20,` +
			`"completion_tokens":8,"prompt_tokens_details":null},"prompt_logprobs":null}`, true},
		{"no usage, null content", `{"choices":[{"index":0,"message":{"content":null}}]}`, true},
		{"older reasoning_content", `{"choices":[{"index":0,"message":{"content":"a","reasoning_content":"r"},"finish_reason":"length"}]}`, true},
		{"escaped key", `{"choi\u0063es":[{"index":0,"message":{"content":"a"}}]}`, true},
		{"empty choices", `{"choices":[]}`, true},
		{"key in other case", `{"Choices":[{"index":0,"message":{"content":"a"}}]}`, false},
		{"message key in other case", `{"choices":[{"index":0,"message":{"Content":"a"}}]}`, false},
		{"duplicate choices", `{"choices":[],"choices":[{"index":0,"message":{"content":"a"}}]}`, false},
		{"duplicate content", `{"choices":[{"index":0,"message":{"content":"a","content":"b"}}]}`, false},
		{"error member", `{"error":{"message":"overloaded","code":503}}`, false},
		{"null choices", `{"choices":null}`, false},
		{"null message", `{"choices":[{"index":0,"message":null}]}`, false},
		{"float index", `{"choices":[{"index":0.0,"message":{"content":"a"}}]}`, false},
		{"content not a string", `{"choices":[{"index":0,"message":{"content":5}}]}`, false},
		{"usage not integers", `{"choices":[],"usage":{"prompt_tokens":1.5}}`, false},
		{"truncated", string(okBody(1)[:40]), false},
		{"not an object", `[1,2]`, false},
		{"trailing garbage", `{"choices":[]} x`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, usual := scanResponse([]byte(tt.body))
			if usual != tt.usual {
				t.Fatalf("usual = %v, want %v", usual, tt.usual)
			}
			if !usual {
				return
			}
			var want wireResponse
			if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
				t.Fatalf("encoding/json refuses what the scan took: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("scan %s\nencoding/json %s", dump(got), dump(want))
			}
		})
	}
}

func dump(w wireResponse) string {
	b, _ := json.Marshal(w)
	return string(b)
}

// FuzzScanResponse: whatever the scan takes, encoding/json decodes to the
// same wireResponse.
func FuzzScanResponse(f *testing.F) {
	f.Add(okBody(1))
	f.Add(okBody(3))
	f.Add([]byte(`{"choices":[{"index":1,"message":{"content":"b","reasoning":"\ud800x"}},{"index":0,"message":{"content":"a\u2028"}}],"usage":{"prompt_tokens":-3}}`))
	f.Add([]byte(`{"error":{"code":503}}`))
	f.Add([]byte(`{"CHOICES":[], "choices":[{"index":0,"message":{"content":"\xff"}}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, usual := scanResponse(raw)
		if !usual {
			return
		}
		var want wireResponse
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("scan took %q, encoding/json: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: scan %s, encoding/json %s", raw, dump(got), dump(want))
		}
	})
}

// BenchmarkDecodeResponse decodes a grounded synthesize reply (~2.5 KB of
// JSON in the content) as encoding/json did before and as the scan does.
func BenchmarkDecodeResponse(b *testing.B) {
	content := `{"questions": [{"question": "Why does a database log first?", "criteria": [` +
		strings.Repeat(`{"id": "c1", "weight": 3, "name": "Ordering", "description": "States that the log write reaches disk first.", "required_elements": ["append before update"]}, `, 12) + `{}]}]}`
	raw := completionBody(900, 700, Choice{Content: content, FinishReason: "stop"})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var w wireResponse
			if err := unmarshalResponse(raw, &w); err != nil {
				b.Fatal(err)
			}
			if _, err := w.decoded(1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeResponse(raw, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
