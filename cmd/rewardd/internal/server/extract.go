package server

import (
	"errors"
	"strings"
)

// A chat turn as the templates we know write it.
type turnMarks struct{ open, close string }

// userTurns are the user-turn markers of the chat templates rewardd reads
// problems out of.
var userTurns = []turnMarks{
	{"<|im_start|>user", "<|im_end|>"},                         // ChatML (Qwen, many others)
	{"<|start_header_id|>user<|end_header_id|>", "<|eot_id|>"}, // Llama 3
	{"<start_of_turn>user", "<end_of_turn>"},                   // Gemma
	{"[INST]", "[/INST]"},                                      // Mistral, Llama 2
	{"<｜User｜>", "<｜Assistant｜>"},                              // DeepSeek V3 and R1
	{"<|user|>", "<|end|>"},                                    // Phi-3
}

// assistantHeaders open the assistant turn in the same templates.
var assistantHeaders = []string{
	"<|im_start|>assistant",
	"<|start_header_id|>assistant<|end_header_id|>",
	"<start_of_turn>model",
	"[/INST]",
	"<｜Assistant｜>",
	"<|assistant|>",
}

// endTokens are the end-of-turn and end-of-sequence tokens a decoded
// response may end with.
var endTokens = []string{"<|im_end|>", "<|eot_id|>", "</s>", "<|endoftext|>", "<|end|>", "<end_of_turn>", "<｜end▁of▁sentence｜>"}

// promptTexts are the texts of a prompt the problem may be: the user turns
// of a chat-templated prompt, last first, then the whole prompt.
func promptTexts(prompt string) []string {
	var out []string
	for _, t := range userTurns {
		for rest := prompt; ; {
			i := strings.Index(rest, t.open)
			if i < 0 {
				break
			}
			rest = rest[i+len(t.open):]
			body := rest
			if j := strings.Index(rest, t.close); j >= 0 {
				body = rest[:j]
			}
			out = append(out, body)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return append(out, prompt)
}

// maxRunLines bounds how many lines of a prompt lineRuns looks at, and
// maxMiddleLines those it also tries runs in the middle of.
const (
	maxRunLines    = 200
	maxMiddleLines = 20
)

// lineRuns are the candidate problem texts in one user text: the whole text,
// then its runs of whole lines, longest first: those that start at its first
// line or end at its last (an instruction after or before the problem, as
// in "Question: {}\nAnswer:"), then for a short text those in its middle
// (an instruction on both sides); each also with a "Problem:" or
// "Question:" label dropped from its first line.
func lineRuns(text string) []string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	out := append([]string{text}, unlabeled(text)...)
	if len(lines) < 2 || len(lines) > maxRunLines {
		return out
	}
	add := func(run []string) {
		s := strings.Join(run, "\n")
		out = append(out, s)
		out = append(out, unlabeled(s)...)
	}
	for n := len(lines) - 1; n >= 1; n-- {
		add(lines[:n])
		add(lines[len(lines)-n:])
	}
	if len(lines) <= maxMiddleLines {
		for n := len(lines) - 2; n >= 1; n-- {
			for i := 1; i+n < len(lines); i++ {
				add(lines[i : i+n])
			}
		}
	}
	return out
}

// unlabeled drops a leading "Problem:" or "Question:" label.
func unlabeled(s string) []string {
	t := strings.TrimSpace(s)
	for _, label := range []string{"Problem:", "Question:", "problem:", "question:"} {
		if rest, ok := strings.CutPrefix(t, label); ok {
			return []string{rest}
		}
	}
	return nil
}

// ErrNoResponse is returned when a query holds no recognizable response.
var ErrNoResponse = errors.New("the response is not in the query: the query does not start with the prompt and has no assistant header of a known chat template")

// ErrAmbiguousResponse is returned when a query whose prompt is not known
// holds more than one assistant header: the response starts after one of
// them, and the response itself may hold the text of one, so which one
// would be a guess (the last would hide from the judge everything the
// response wrote before it).
var ErrAmbiguousResponse = errors.New("the response is not told from the prompt: the query holds more than one assistant header of a known chat template, and a response may contain one; send the prompts (OpenRLHF's remote reward client does) to have it judged")

// ResponseFromQuery cuts the response out of an OpenRLHF query (the
// chat-templated prompt and response, decoded with special tokens): the
// text after the prompt when the query starts with it, otherwise after the
// assistant header of a known chat template; then trailing end tokens
// (<|im_end|>, <|eot_id|>, </s>, <|endoftext|>, ...) and white space are cut.
// A query without the prompt that holds several assistant headers gives the
// text after the last one with ErrAmbiguousResponse: it must not be judged.
func ResponseFromQuery(query, prompt string) (string, error) {
	if prompt != "" && strings.HasPrefix(query, prompt) {
		return TrimEndTokens(query[len(prompt):]), nil
	}
	h := findHeaders(query)
	switch {
	case h.count == 0:
		return "", ErrNoResponse
	case h.count > 1:
		return TrimEndTokens(query[h.lastEnd:]), ErrAmbiguousResponse
	}
	return TrimEndTokens(query[h.lastEnd:]), nil
}

// headers are where the assistant headers of a query are.
type headers struct {
	count          int
	first, lastEnd int // the start of the first, the end of the last
}

func findHeaders(query string) headers {
	h := headers{first: len(query)}
	last := -1
	for _, hd := range assistantHeaders {
		n := strings.Count(query, hd)
		if n == 0 {
			continue
		}
		h.count += n
		h.first = min(h.first, strings.Index(query, hd))
		if i := strings.LastIndex(query, hd); i > last {
			last, h.lastEnd = i, i+len(hd)
		}
	}
	return h
}

// PromptOfQuery is the part of a query before its assistant header: the
// templated prompt, for finding the problem when a request has no prompt.
// With several headers it is the part before the first, which is surely
// prompt (a response may hold a header, and a user turn after it, to be
// scored against another problem). It is the whole query when there is no
// header.
func PromptOfQuery(query string) string {
	h := findHeaders(query)
	if h.count == 0 {
		return query
	}
	return query[:h.first]
}

// TrimEndTokens cuts end-of-turn tokens and white space off the end of a
// response (and the newline a template puts after an assistant header off
// its start).
func TrimEndTokens(s string) string {
	for {
		t := strings.TrimRight(s, " \t\r\n")
		for _, tok := range endTokens {
			t = strings.TrimSuffix(t, tok)
		}
		if t == s {
			break
		}
		s = t
	}
	return strings.TrimLeft(s, "\r\n")
}
