package sim

import (
	"strconv"

	"github.com/rubricforge/rubricforge/internal/jsonscan"
)

// chatKeys are the request members chatRequest reads.
func chatKeys() []string {
	return []string{"model", "messages", "n", "seed", "stream", "temperature", "top_p", "top_k", "min_p",
		"presence_penalty", "frequency_penalty", "repetition_penalty", "max_tokens", "max_completion_tokens", "stop",
		"response_format"}
}

// scanChatRequest decodes the usual chat-completions body in one validating
// pass and a walk instead of encoding/json's scan and reflection (a third
// of the simulator's CPU per request). It takes only what encoding/json
// decodes to the same chatRequest: valid JSON, every member it reads
// present once, spelled exactly, of the expected type and not null.
// Anything else returns false, and parseChat leaves the body to
// encoding/json, whose results and error texts stay the only ones. The
// raw values (a message's content, stop) are slices of body.
func scanChatRequest(body []byte) (chatRequest, bool) {
	var req chatRequest
	if !jsonscan.Valid(body) {
		return req, false
	}
	seen := map[string]bool{}
	err := jsonscan.EachMember(body, func(key string, val []byte) error {
		if seen[key] || string(val) == "null" {
			return jsonscan.ErrNotJSON
		}
		seen[key] = true
		if !req.scanMember(key, val) {
			return jsonscan.ErrNotJSON
		}
		return nil
	})
	return req, err == nil
}

// scanMember sets the member key of req from its value; false for a value
// of another type, or a key encoding/json would match ignoring case.
func (req *chatRequest) scanMember(key string, val []byte) bool {
	ok := true
	switch key {
	case "model":
		req.Model, ok = scanString(val)
	case "messages":
		req.Messages, ok = jsonscan.Elements(val, scanMessage)
	case "n":
		req.N, ok = scanNumber(val, strconv.Atoi)
	case "seed":
		req.Seed, ok = scanNumber(val, parseInt64)
	case "stream":
		req.Stream, ok = string(val) == "true", string(val) == "true" || string(val) == "false"
	case "temperature":
		req.Temperature, ok = scanNumber(val, parseFloat64)
	case "top_p":
		req.TopP, ok = scanNumber(val, parseFloat64)
	case "top_k":
		req.TopK, ok = scanNumber(val, parseFloat64)
	case "min_p":
		req.MinP, ok = scanNumber(val, parseFloat64)
	case "presence_penalty":
		req.PresencePenalty, ok = scanNumber(val, parseFloat64)
	case "frequency_penalty":
		req.FrequencyPenalty, ok = scanNumber(val, parseFloat64)
	case "repetition_penalty":
		req.RepetitionPenalty, ok = scanNumber(val, parseFloat64)
	case "max_tokens":
		req.MaxTokens, ok = scanNumber(val, parseInt64)
	case "max_completion_tokens":
		req.MaxCompletionTokens, ok = scanNumber(val, parseInt64)
	case "stop":
		req.Stop = val
	case "response_format":
		ok = req.scanResponseFormat(val)
	default:
		return !jsonscan.FoldsTo(key, chatKeys()...)
	}
	return ok
}

func (req *chatRequest) scanResponseFormat(val []byte) bool {
	if val[0] != '{' {
		return false
	}
	req.ResponseFormat = &struct {
		Type string `json:"type"`
	}{}
	seen := false
	err := jsonscan.EachMember(val, func(key string, v []byte) error {
		if key != "type" {
			if jsonscan.FoldsTo(key, "type") {
				return jsonscan.ErrNotJSON
			}
			return nil
		}
		t, ok := scanString(v)
		if !ok || seen {
			return jsonscan.ErrNotJSON
		}
		req.ResponseFormat.Type, seen = t, true
		return nil
	})
	return err == nil
}

func scanMessage(elem []byte) (wireMessage, bool) {
	var m wireMessage
	if elem[0] != '{' {
		return m, false
	}
	var seenRole, seenContent bool
	err := jsonscan.EachMember(elem, func(key string, v []byte) error {
		ok := true
		switch {
		case string(v) == "null":
			ok = false
		case key == "role" && !seenRole:
			m.Role, ok = scanString(v)
			seenRole = true
		case key == "content" && !seenContent:
			m.Content, seenContent = v, true
		default:
			ok = !jsonscan.FoldsTo(key, "role", "content")
		}
		if !ok {
			return jsonscan.ErrNotJSON
		}
		return nil
	})
	return m, err == nil
}

func scanString(v []byte) (string, bool) {
	if v[0] != '"' {
		return "", false
	}
	return jsonscan.Unquote(v)
}

// scanNumber reads a number with parse, as encoding/json reads one into a
// pointer field.
func scanNumber[T any](v []byte, parse func(string) (T, error)) (*T, bool) {
	x, err := parse(string(v))
	if err != nil {
		return nil, false
	}
	return &x, true
}

func parseInt64(s string) (int64, error)     { return strconv.ParseInt(s, 10, 64) }
func parseFloat64(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
