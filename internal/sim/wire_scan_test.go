package sim

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestScanChatRequest: the usual request body is decoded by the scan to
// what encoding/json decodes it to, and a body it is not sure of is left to
// encoding/json.
func TestScanChatRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		usual bool
	}{
		{"llm client's request", `{"model":"simulated","messages":[{"role":"system","content":"You grade."},` +
			`{"role":"user","content":"<passage>\n\"x\" \u00e9\u2028</passage>"}],"max_completion_tokens":4096,` +
			`"temperature":1e-45,"stream":false,"response_format":{"type":"json_object"},"seed":-7}`, true},
		{"every field", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}],"name":"x"}],"n":3,` +
			`"seed":1,"stream":true,"temperature":0.7,"top_p":0.9,"top_k":20,"min_p":0.05,"presence_penalty":0.1,` +
			`"frequency_penalty":-0.2,"repetition_penalty":1.1,"max_tokens":5,"max_completion_tokens":6,"stop":["\n\n"],` +
			`"response_format":{"type":"json_schema","json_schema":{"name":"x"}},"user":"u"}`, true},
		{"no messages", `{"model":"m","messages":[]}`, true},
		{"key in other case", `{"Model":"m","messages":[]}`, false},
		{"message key in other case", `{"model":"m","messages":[{"Role":"user","content":"a"}]}`, false},
		{"duplicate key", `{"model":"m","model":"n","messages":[]}`, false},
		{"null seed", `{"model":"m","messages":[],"seed":null}`, false},
		{"null content", `{"model":"m","messages":[{"role":"user","content":null}]}`, false},
		{"float n", `{"model":"m","messages":[],"n":1.5}`, false},
		{"string temperature", `{"model":"m","messages":[],"temperature":"0.7"}`, false},
		{"messages not a list", `{"model":"m","messages":{}}`, false},
		{"not JSON", `{"model":`, false},
		{"not an object", `["model"]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, usual := scanChatRequest([]byte(tt.body))
			if usual != tt.usual {
				t.Fatalf("usual = %v, want %v", usual, tt.usual)
			}
			if usual {
				assertSameAsEncodingJSON(t, []byte(tt.body), got)
			}
		})
	}
}

func assertSameAsEncodingJSON(t *testing.T, body []byte, got chatRequest) {
	t.Helper()
	var want chatRequest
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("encoding/json refuses what the scan took (%q): %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%q:\nscan          %s\nencoding/json %s", body, g, w)
	}
}

// FuzzScanChatRequest: whatever the scan takes, encoding/json decodes to
// the same chatRequest.
func FuzzScanChatRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"q"}],"max_completion_tokens":10,"stream":false,"seed":1}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"\ud800\u00e9"}],"temperature":1e-45,"top_p":0.95,"n":2}`))
	f.Add([]byte(`{"model":"m","messages":[],"stop":["x"],"response_format":{"type":"json_object","TYPE":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if got, usual := scanChatRequest(body); usual {
			assertSameAsEncodingJSON(t, body, got)
		}
	})
}

// TestResponseJSONMatchesEncodingJSON: a reply is written byte for byte as
// encoding/json.Marshal wrote it (the demos' figures and the cache bytes
// depend on the replies being the same).
func TestResponseJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		resp chatResponse
	}{
		{"no choices", chatResponse{ID: "chatcmpl-1", Object: "chat.completion", Model: "sim"}},
		{"grounded reply", chatResponse{ID: "chatcmpl-x", Object: "chat.completion", Created: 1700000000, Model: "simulated",
			SystemFingerprint: "llmtest", Choices: []choice{{Index: 0, Message: responseMessage{Role: "assistant",
				Content: `{"questions": [{"question": "Why <a> & \"b\"?\n", "criteria": []}]}`}, FinishReason: "stop"}},
			Usage: usage{PromptTokens: 900, CompletionTokens: 300, TotalTokens: 1200}}},
		{"several choices with reasoning and logprobs", chatResponse{ID: "i", Object: "o", Created: -1, Model: "m\u2028",
			Choices: []choice{{Index: 1, Message: responseMessage{Role: "assistant", Content: "a\xff", Reasoning: "think\t1"}, Logprobs: &struct{}{}, FinishReason: "length"},
				{Index: 0, Message: responseMessage{Role: "assistant"}, FinishReason: "stop"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.resp)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.resp.marshal(); string(got) != string(want) {
				t.Errorf("reply\n got %s\nwant %s", got, want)
			}
		})
	}
}

func FuzzResponseJSON(f *testing.F) {
	f.Add("chatcmpl-1", "simulated", "{\"a\": \"<b>\"}\n", "", 3, int64(5), true)
	f.Add("", "", "\xff\u2029", "r", 0, int64(-1), false)
	f.Fuzz(func(t *testing.T, id, model, content, reasoning string, index int, created int64, logprobs bool) {
		c := choice{Index: index, Message: responseMessage{Role: "assistant", Content: content, Reasoning: reasoning}, FinishReason: "stop"}
		if logprobs {
			c.Logprobs = &struct{}{}
		}
		resp := chatResponse{ID: id, Object: "chat.completion", Created: created, Model: model, Choices: []choice{c, c},
			Usage: usage{PromptTokens: index, CompletionTokens: len(content), TotalTokens: index + len(content)}}
		want, _ := json.Marshal(resp)
		if got := resp.marshal(); string(got) != string(want) {
			t.Fatalf("reply\n got %s\nwant %s", got, want)
		}
	})
}
