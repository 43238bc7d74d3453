package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// The wire types read only what Chat needs from a raw chat-completion
// body, including the vendor fields go-openai drops (vLLM's `reasoning`;
// older servers' `reasoning_content`).
type wireMessage struct {
	Content          *string `json:"content"`
	Reasoning        *string `json:"reasoning"`
	ReasoningContent *string `json:"reasoning_content"`
}

type wireChoice struct {
	Index        *int         `json:"index"`
	Message      *wireMessage `json:"message"`
	FinishReason *string      `json:"finish_reason"`
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// PromptTokensDetails is where vLLM (with
	// --enable-prompt-tokens-details), SGLang and the hosted APIs say how
	// many of the prompt tokens their prefix cache reused.
	PromptTokensDetails *wireTokenDetails `json:"prompt_tokens_details"`
}

type wireTokenDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

type wireResponse struct {
	Choices *[]wireChoice   `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// decoded is a parsed, validated response body.
type decoded struct {
	choices          []Choice
	promptTokens     int64
	cachedTokens     int64 // of promptTokens, those the server's prefix cache reused
	completionTokens int64
}

// decodeResponse parses a raw chat-completion body and checks that it
// holds exactly want choices with distinct indices. Errors wrap
// errMalformed or errChoiceCount, or are a *bodyError when a 2xx body
// reports an error.
func decodeResponse(raw []byte, want int) (decoded, error) {
	w, usual := scanResponse(raw)
	if !usual {
		w = wireResponse{}
		if err := unmarshalResponse(raw, &w); err != nil {
			return decoded{}, err
		}
	}
	return w.decoded(want)
}

// unmarshalResponse decodes raw with encoding/json, whose errors are the
// only ones.
func unmarshalResponse(raw []byte, w *wireResponse) error {
	if err := json.Unmarshal(raw, w); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok && se.Offset >= int64(len(raw)) && se.Error() == "unexpected end of JSON input" {
			// The JSON ends early: a connection cut mid-body, worth another try.
			return &bodyError{class: ClassRetryable, reason: "truncated", msg: "the body ends before its JSON does (truncated): " + err.Error()}
		}
		return fmt.Errorf("%w: %w", errMalformed, err)
	}
	return nil
}

// decoded checks a decoded body: exactly want choices with distinct
// indices 0..want-1, or the error the body reports.
func (w *wireResponse) decoded(want int) (decoded, error) {
	if w.Choices == nil {
		if len(w.Error) > 0 && string(w.Error) != "null" {
			return decoded{}, errorInBody(w.Error)
		}
		return decoded{}, fmt.Errorf("%w: no choices field", errMalformed)
	}
	choices := make([]Choice, 0, len(*w.Choices))
	for i, c := range *w.Choices {
		if c.Message == nil {
			return decoded{}, fmt.Errorf("%w: choice %d has no message", errMalformed, i)
		}
		ch := Choice{Index: i}
		if c.Index != nil {
			ch.Index = *c.Index
		}
		if c.Message.Content != nil {
			ch.Content = *c.Message.Content
		}
		switch {
		case c.Message.Reasoning != nil && *c.Message.Reasoning != "":
			ch.Reasoning = *c.Message.Reasoning
		case c.Message.ReasoningContent != nil:
			ch.Reasoning = *c.Message.ReasoningContent
		}
		if c.FinishReason != nil {
			ch.FinishReason = *c.FinishReason
		}
		choices = append(choices, ch)
	}
	if len(choices) != want {
		return decoded{}, fmt.Errorf("%w: got %d, asked for %d", errChoiceCount, len(choices), want)
	}
	slices.SortStableFunc(choices, func(a, b Choice) int { return a.Index - b.Index })
	for i, c := range choices {
		if c.Index != i {
			return decoded{}, fmt.Errorf("%w: choice indices are not 0..%d", errChoiceCount, want-1)
		}
	}
	d := decoded{choices: choices}
	if w.Usage != nil {
		d.promptTokens = max(w.Usage.PromptTokens, 0)
		d.completionTokens = max(w.Usage.CompletionTokens, 0)
		if det := w.Usage.PromptTokensDetails; det != nil {
			d.cachedTokens = min(max(det.CachedTokens, 0), d.promptTokens)
		}
	}
	return d, nil
}

// errorInBody turns {"error": ...} inside a 2xx body into an error,
// retryable when its code says rate limit or server trouble.
func errorInBody(raw json.RawMessage) error {
	var e struct {
		Message string `json:"message"`
		Code    any    `json:"code"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &e) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			e.Message = s
		}
	}
	code := 0
	switch v := e.Code.(type) {
	case float64:
		code = int(v)
	case string:
		code, _ = strconv.Atoi(v)
		if v == "rate_limit_exceeded" {
			code = 429
		}
	}
	be := &bodyError{class: ClassPermanent, reason: "error_body", msg: e.Message}
	if code == 429 || code >= 500 && code <= 599 {
		be.class = ClassRetryable
		be.reason = strconv.Itoa(code)
	}
	return be
}
