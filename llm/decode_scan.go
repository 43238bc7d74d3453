package llm

import (
	"strconv"

	"github.com/rubricforge/rubricforge/internal/jsonscan"
)

// scanResponse decodes the usual chat-completion body in one validating
// pass and one walk, instead of encoding/json's scan, validation and
// reflection (6% of a grounded run's CPU). It takes only what it is sure
// encoding/json would decode to the same wireResponse: valid JSON, each
// field the client reads present at most once, spelled exactly, with the
// type expected, and no "error" member. Anything else (a key that differs
// only in case, which encoding/json would match; a duplicate; a null where
// an object is expected; a number that is not a plain integer) returns
// false, and decodeResponse leaves the body to encoding/json, whose result
// and errors stay the only ones.
func scanResponse(raw []byte) (wireResponse, bool) {
	var w wireResponse
	if !jsonscan.Valid(raw) {
		return w, false
	}
	var seen [2]bool
	err := jsonscan.EachMember(raw, func(key string, val []byte) error {
		switch key {
		case "choices":
			if seen[0] {
				return jsonscan.ErrNotJSON
			}
			seen[0] = true
			choices, ok := jsonscan.Elements(val, scanChoice)
			if !ok {
				return jsonscan.ErrNotJSON
			}
			w.Choices = &choices
		case "usage":
			if seen[1] {
				return jsonscan.ErrNotJSON
			}
			seen[1] = true
			u, ok := scanUsage(val)
			if !ok {
				return jsonscan.ErrNotJSON
			}
			w.Usage = u
		default:
			return unlessFolds(key, "choices", "usage", "error")
		}
		return nil
	})
	return w, err == nil
}

// unlessFolds refuses a key that encoding/json would match to one of
// names, ignoring case.
func unlessFolds(key string, names ...string) error {
	if jsonscan.FoldsTo(key, names...) {
		return jsonscan.ErrNotJSON
	}
	return nil
}

func scanChoice(raw []byte) (wireChoice, bool) {
	var c wireChoice
	if raw[0] != '{' {
		return c, false
	}
	err := jsonscan.EachMember(raw, func(key string, val []byte) error {
		var ok bool
		switch key {
		case "index":
			if c.Index != nil {
				return jsonscan.ErrNotJSON
			}
			var i int
			i, ok = scanInt(val)
			c.Index = &i
		case "message":
			if c.Message != nil {
				return jsonscan.ErrNotJSON
			}
			c.Message, ok = scanMessage(val)
		case "finish_reason":
			if c.FinishReason != nil {
				return jsonscan.ErrNotJSON
			}
			c.FinishReason, ok = scanString(val)
		default:
			return unlessFolds(key, "index", "message", "finish_reason")
		}
		if !ok {
			return jsonscan.ErrNotJSON
		}
		return nil
	})
	return c, err == nil
}

func scanMessage(raw []byte) (*wireMessage, bool) {
	if raw[0] != '{' {
		return nil, false
	}
	m := &wireMessage{}
	var seen [3]bool
	err := jsonscan.EachMember(raw, func(key string, val []byte) error {
		var field **string
		var i int
		switch key {
		case "content":
			field, i = &m.Content, 0
		case "reasoning":
			field, i = &m.Reasoning, 1
		case "reasoning_content":
			field, i = &m.ReasoningContent, 2
		default:
			return unlessFolds(key, "content", "reasoning", "reasoning_content")
		}
		var ok bool
		if *field, ok = scanString(val); !ok || seen[i] {
			return jsonscan.ErrNotJSON
		}
		seen[i] = true
		return nil
	})
	return m, err == nil
}

func scanUsage(raw []byte) (*wireUsage, bool) {
	if raw[0] != '{' {
		return nil, false
	}
	u := &wireUsage{}
	var seen [3]bool
	err := jsonscan.EachMember(raw, func(key string, val []byte) error {
		var field *int64
		var i int
		switch key {
		case "prompt_tokens":
			field, i = &u.PromptTokens, 0
		case "completion_tokens":
			field, i = &u.CompletionTokens, 1
		case "prompt_tokens_details":
			if seen[2] {
				return jsonscan.ErrNotJSON
			}
			seen[2] = true
			return scanTokenDetails(val, u)
		default:
			return unlessFolds(key, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
		}
		v, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil || seen[i] {
			return jsonscan.ErrNotJSON
		}
		*field, seen[i] = v, true
		return nil
	})
	return u, err == nil
}

// scanTokenDetails reads usage.prompt_tokens_details (null, or an object
// whose cached_tokens is an integer or null) into u.
func scanTokenDetails(raw []byte, u *wireUsage) error {
	if string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return jsonscan.ErrNotJSON
	}
	d := &wireTokenDetails{}
	seen := false
	err := jsonscan.EachMember(raw, func(key string, val []byte) error {
		if key != "cached_tokens" {
			return unlessFolds(key, "cached_tokens")
		}
		if seen {
			return jsonscan.ErrNotJSON
		}
		seen = true
		if string(val) == "null" {
			return nil
		}
		v, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil {
			return jsonscan.ErrNotJSON
		}
		d.CachedTokens = v
		return nil
	})
	u.PromptTokensDetails = d
	return err
}

// scanString reads a string or null (nil) value.
func scanString(raw []byte) (*string, bool) {
	if string(raw) == "null" {
		return nil, true
	}
	if raw[0] != '"' {
		return nil, false
	}
	s, ok := jsonscan.Unquote(raw)
	return &s, ok
}

// scanInt reads a plain integer literal that fits an int.
func scanInt(raw []byte) (int, bool) {
	i, err := strconv.Atoi(string(raw))
	return i, err == nil
}
