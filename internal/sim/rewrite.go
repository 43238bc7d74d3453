package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
)

// Rewrite is a transport for tests that hands each request to Next and
// rewrites every chat completion Next answers with 200: Edit gets the
// first choice's content and finish_reason and returns the ones to send
// instead. A test makes a judge whose replies it shapes with it (one that
// quotes the judged response, breaks or cuts off its own verdict), around
// the simulated judge's own reply.
type Rewrite struct {
	Next http.RoundTripper
	Edit func(content, finish string) (string, string)
}

func (w Rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.Next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, err
	}
	choice := body["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	finish, _ := choice["finish_reason"].(string)
	content, _ := msg["content"].(string)
	msg["content"], choice["finish_reason"] = w.Edit(content, finish)
	b, err = json.Marshal(body)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return resp, nil
}
