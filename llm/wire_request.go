package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	openai "github.com/sashabaranov/go-openai"

	"github.com/rubricforge/rubricforge/internal/jsonenc"
)

// The client sends each chat completion itself, the way go-openai's
// CreateChatCompletion (v1.43.0) sends it: the same client-side checks, the
// same URL and headers, a body byte for byte what go-openai's json.Marshal
// of the request makes, and the same error values for a failed status. It
// writes the body without reflection, once per request rather than once per
// attempt: go-openai's encoding (reflection, then each message marshalled
// on its own and the result validated and compacted again) was a tenth of a
// run's CPU.

// chatPath is appended to the base URL, as go-openai does.
const chatPath = "/chat/completions"

// completionOnly reports the models go-openai refuses for chat completions
// (ErrChatCompletionInvalidModel): the old completions models.
func completionOnly(model string) bool {
	// go-openai v1.43.0's list, by value: most of its names for them are
	// deprecated (the models are shut down), the refusal is not.
	switch model {
	case "code-davinci-002", "code-cushman-001", "code-davinci-001",
		"text-davinci-003", "text-davinci-002", "text-curie-001",
		"text-babbage-001", "text-ada-001", "text-davinci-001",
		"davinci-instruct-beta", "davinci", "curie-instruct-beta",
		"curie", "ada", "babbage":
		return true
	}
	return false
}

// checkWire makes go-openai's client-side checks of a chat completion.
func checkWire(wire *openai.ChatCompletionRequest) error {
	if completionOnly(wire.Model) {
		return openai.ErrChatCompletionInvalidModel
	}
	return openai.NewReasoningValidator().Validate(*wire)
}

// appendWire appends the JSON of wire as encoding/json marshals it, for the
// fields wireRequest sets (the others are zero, and omitted or false).
func appendWire(b []byte, wire *openai.ChatCompletionRequest) []byte {
	b = append(b, `{"model":`...)
	b = jsonenc.AppendString(b, wire.Model)
	b = append(b, `,"messages":`...)
	if wire.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range wire.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendWireMessage(b, &wire.Messages[i])
		}
		b = append(b, ']')
	}
	//lint:ignore SA1019 max_tokens is sent as go-openai sends it, for Options.LegacyMaxTokens
	b = appendIntField(b, `,"max_tokens":`, wire.MaxTokens)
	b = appendIntField(b, `,"max_completion_tokens":`, wire.MaxCompletionTokens)
	if wire.Temperature != 0 {
		b = jsonenc.AppendFloat32(append(b, `,"temperature":`...), wire.Temperature)
	}
	if wire.TopP != 0 {
		b = jsonenc.AppendFloat32(append(b, `,"top_p":`...), wire.TopP)
	}
	b = appendIntField(b, `,"n":`, wire.N)
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, wire.Stream)
	if rf := wire.ResponseFormat; rf != nil {
		b = append(b, `,"response_format":{`...)
		if rf.Type != "" {
			b = jsonenc.AppendString(append(b, `"type":`...), string(rf.Type))
		}
		b = append(b, '}')
	}
	if wire.Seed != nil {
		b = strconv.AppendInt(append(b, `,"seed":`...), int64(*wire.Seed), 10)
	}
	return append(b, '}')
}

// appendWireMessage appends a message with a role and text content, as
// go-openai's ChatCompletionMessage.MarshalJSON writes it.
func appendWireMessage(b []byte, m *openai.ChatCompletionMessage) []byte {
	b = jsonenc.AppendString(append(b, `{"role":`...), m.Role)
	if m.Content != "" {
		b = jsonenc.AppendString(append(b, `,"content":`...), m.Content)
	}
	return append(b, '}')
}

// appendIntField appends an omitempty int field.
func appendIntField(b []byte, name string, v int) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), int64(v), 10)
}

// wireBody is the JSON body of wire, in one allocation of about its size.
func wireBody(wire *openai.ChatCompletionRequest) []byte {
	size := 256 + len(wire.Model)
	for _, m := range wire.Messages {
		size += 32 + len(m.Role) + len(m.Content) + len(m.Content)/8 // room for some escapes
	}
	return appendWire(make([]byte, 0, size), wire)
}

// post sends one chat completion whose body is body and whose fields are
// wire's, through the capturing HTTP client, and returns the error
// go-openai's CreateChatCompletion would return: its client-side checks'
// sentinels, the transport's error, or *openai.APIError or
// *openai.RequestError for a failed status.
func (c *Client) post(ctx context.Context, wire *openai.ChatCompletionRequest, body []byte) error {
	if err := checkWire(wire); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.chatURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.doer.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return statusError(resp)
	}
	// As go-openai does: decode the body as a chat completion. For a 2xx
	// body read whole captureDoer hands over capturedOK (Chat decodes the
	// captured bytes), else the bytes read and then the error that cut them.
	if _, ok := resp.Body.(capturedOK); ok {
		return nil
	}
	var v openai.ChatCompletionResponse
	return json.NewDecoder(resp.Body).Decode(&v)
}

// statusError is go-openai's error for a failed status: the server's
// {"error": {...}} as *openai.APIError, anything else as
// *openai.RequestError holding the body.
func statusError(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("error, reading response body: %w", err)
	}
	var er openai.ErrorResponse
	err = json.Unmarshal(body, &er)
	if err != nil || er.Error == nil {
		re := &openai.RequestError{HTTPStatus: resp.Status, HTTPStatusCode: resp.StatusCode, Err: err, Body: body}
		if er.Error != nil {
			re.Err = er.Error
		}
		return re
	}
	er.Error.HTTPStatus = resp.Status
	er.Error.HTTPStatusCode = resp.StatusCode
	return er.Error
}
