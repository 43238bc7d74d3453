package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/internal/jsonenc"
	"github.com/rubricforge/rubricforge/internal/jsonscan"
)

// chatRequest is the part of an OpenAI chat-completions request the
// simulator reads.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	N                   *int            `json:"n"`
	Seed                *int64          `json:"seed"`
	Stream              bool            `json:"stream"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *float64        `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	RepetitionPenalty   *float64        `json:"repetition_penalty"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

// jsonMode is true when the request asks for JSON output only.
func (req *chatRequest) jsonMode() bool {
	return req.ResponseFormat != nil && (req.ResponseFormat.Type == "json_object" || req.ResponseFormat.Type == "json_schema")
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// messages decodes the request's messages; content may be a string or a
// list of text parts.
func (req *chatRequest) messages() ([]Message, error) {
	out := make([]Message, 0, len(req.Messages))
	for i, m := range req.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		out = append(out, Message{Role: m.Role, Content: text})
	}
	return out, nil
}

func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' { // a string, checked by the request's decoding
		if s, ok := jsonscan.Unquote(raw); ok {
			return s, nil
		}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of text parts")
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

func (req *chatRequest) n() int {
	if req.N == nil || *req.N == 0 {
		return 1
	}
	return *req.N
}

// maxTokens is the effective completion-token limit; 0 means none.
func (req *chatRequest) maxTokens() int64 {
	switch {
	case req.MaxCompletionTokens != nil && *req.MaxCompletionTokens > 0:
		return *req.MaxCompletionTokens
	case req.MaxTokens != nil && *req.MaxTokens > 0:
		return *req.MaxTokens
	}
	return 0
}

// requestKey hashes everything that determines the answer, independent of
// JSON field order and spacing.
func requestKey(req *chatRequest, msgs []Message) uint64 {
	k := newKeyer(0).str("llmtest-request-v1").str(req.Model).u64(uint64(len(msgs)))
	for _, m := range msgs {
		k.str(m.Role).str(m.Content)
	}
	return k.sampling(req, greedyJudge(req, msgs)).sum()
}

// samplingKey hashes what decides a reply besides the messages: the model,
// the seed (none for a greedy judge's), n and the sampling parameters.
// A judge's verdicts are drawn from it and from what the prompt says, not
// from the prompt's bytes, so the same question laid out otherwise (the
// cache or the paper layout, alone or in a group) gets the same verdicts.
func samplingKey(req *chatRequest, msgs []Message) uint64 {
	return newKeyer(0).str("llmtest-sampling-v1").str(req.Model).sampling(req, greedyJudge(req, msgs)).sum()
}

// sampling adds req's seed (unless greedy: a greedy judge's seed changes
// nothing), n and sampling parameters to k.
func (k *keyer) sampling(req *chatRequest, greedy bool) *keyer {
	if req.Seed != nil && !greedy {
		k.u64(1).u64(uint64(*req.Seed))
	} else {
		k.u64(0)
	}
	k.u64(uint64(req.n()))
	for _, f := range []*float64{req.Temperature, req.TopP, req.TopK, req.MinP, req.PresencePenalty, req.FrequencyPenalty, req.RepetitionPenalty} {
		k.optF(f)
	}
	k.u64(uint64(req.maxTokens()))
	var stop bytes.Buffer
	if len(req.Stop) > 0 && json.Compact(&stop, req.Stop) == nil {
		k.str(stop.String())
	} else {
		k.str("")
	}
	return k.u64(b2u(req.jsonMode()))
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

type chatResponse struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint"`
	Choices           []choice `json:"choices"`
	Usage             usage    `json:"usage"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	Logprobs     *struct{}       `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	Reasoning string `json:"reasoning,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// Details is set by the prefix cache (Config.PrefixCache).
	Details *promptDetails `json:"prompt_tokens_details,omitempty"`
}

// promptDetails is usage.prompt_tokens_details as vLLM and OpenAI send it.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// tokens estimates a token count as a quarter of the bytes.
func tokens(s string) int { return max(1, (len(s)+3)/4) }

type errorEnvelope struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "llmtest: encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, typ string, code any, msg string) {
	writeJSON(w, status, errorEnvelope{errorBody{Message: msg, Type: typ, Code: code}})
}

// writeLlamaError answers 400 with llama.cpp server's error body: a
// numeric code beside the message.
func writeLlamaError(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, errorEnvelope{errorBody{Message: msg, Type: "invalid_request_error", Code: http.StatusBadRequest}})
}

// SimulatedModel is the model id GET /v1/models lists.
const SimulatedModel = "simulated"

type modelList struct {
	Object string      `json:"object"`
	Data   []modelInfo `json:"data"`
}

type modelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// appendJSON appends the JSON of r byte for byte as encoding/json.Marshal
// writes it, without reflection: every reply of the simulator is written
// this way.
func (r *chatResponse) appendJSON(b []byte) []byte {
	b = jsonenc.AppendString(append(b, `{"id":`...), r.ID)
	b = jsonenc.AppendString(append(b, `,"object":`...), r.Object)
	b = strconv.AppendInt(append(b, `,"created":`...), r.Created, 10)
	b = jsonenc.AppendString(append(b, `,"model":`...), r.Model)
	b = jsonenc.AppendString(append(b, `,"system_fingerprint":`...), r.SystemFingerprint)
	b = append(b, `,"choices":`...)
	if r.Choices == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Choices {
			if i > 0 {
				b = append(b, ',')
			}
			b = r.Choices[i].appendJSON(b)
		}
		b = append(b, ']')
	}
	b = strconv.AppendInt(append(b, `,"usage":{"prompt_tokens":`...), int64(r.Usage.PromptTokens), 10)
	b = strconv.AppendInt(append(b, `,"completion_tokens":`...), int64(r.Usage.CompletionTokens), 10)
	b = strconv.AppendInt(append(b, `,"total_tokens":`...), int64(r.Usage.TotalTokens), 10)
	if d := r.Usage.Details; d != nil {
		b = strconv.AppendInt(append(b, `,"prompt_tokens_details":{"cached_tokens":`...), int64(d.CachedTokens), 10)
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

func (c *choice) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"index":`...), int64(c.Index), 10)
	b = jsonenc.AppendString(append(b, `,"message":{"role":`...), c.Message.Role)
	b = jsonenc.AppendString(append(b, `,"content":`...), c.Message.Content)
	if c.Message.Reasoning != "" {
		b = jsonenc.AppendString(append(b, `,"reasoning":`...), c.Message.Reasoning)
	}
	if c.Logprobs == nil {
		b = append(b, `},"logprobs":null`...)
	} else {
		b = append(b, `},"logprobs":{}`...)
	}
	b = jsonenc.AppendString(append(b, `,"finish_reason":`...), c.FinishReason)
	return append(b, '}')
}

// marshal is r's JSON in one allocation of about its size.
func (r *chatResponse) marshal() []byte {
	size := 256
	for _, c := range r.Choices {
		size += 128 + len(c.Message.Content) + len(c.Message.Reasoning) + (len(c.Message.Content)+len(c.Message.Reasoning))/4
	}
	return r.appendJSON(make([]byte, 0, size))
}

// greedyJudge reports whether req is a judge's request (validity,
// satisfaction, grounded scores) at temperature 0. A real server decodes
// it greedily, so its seed changes nothing; the simulated endpoint draws
// its reply, faults included, as without the seed, so that judges that
// send a pinned seed answer as those that sent none.
func greedyJudge(req *chatRequest, msgs []Message) bool {
	if req.Temperature == nil || *req.Temperature > 1e-5 {
		return false
	}
	switch k, _, _ := classify(msgs); k {
	case KindJudgeItem, KindJudgeBatch, KindSatisfy, KindSatisfyGroup, KindScoreGrounded, KindScoreGroundedGroup, KindGroundedJudgeBatch, KindGroundedJudgeItem:
		return true
	}
	return false
}
