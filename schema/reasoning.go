package schema

import "strings"

// Reasoning models served without a reasoning parser write their reasoning
// into the reply before the answer: Qwen3 inside <think>...</think>,
// DeepSeek-R1 before a </think> (its template opens the block in the
// prompt), gpt-oss in Harmony channels (<|channel|>analysis<|message|>...
// <|end|><|start|>assistant<|channel|>final<|message|>..., or with the
// special tokens dropped, "analysis...assistantfinal..."). The reasoning
// may quote anything, the judged response included, so a parser must take
// the answer from after it.

// reasoningFormat is one way a reply opens its reasoning (open, at its
// start) and ends it (close, the start of the final answer).
type reasoningFormat struct {
	open, close string
	// mustClose: a reply that opens the reasoning and never closes it was
	// cut off (an error); otherwise the open text may be plain prose.
	mustClose bool
}

var reasoningFormats = []reasoningFormat{
	{thinkOpen, thinkClose, true},                        // Qwen3 and others
	{"<|channel|>", "<|channel|>final<|message|>", true}, // gpt-oss (Harmony)
	{"<|start|>", "<|channel|>final<|message|>", true},   // gpt-oss, the start token kept
	{"analysis", "assistantfinal", false},                // gpt-oss with the special tokens dropped
}

// bareCloses end reasoning that the reply did not open (DeepSeek-R1's
// template opens <think> in the prompt).
var bareCloses = []string{thinkClose, "<|channel|>final<|message|>"}

// newReply cuts the reasoning off a reply. When the reply opens it at its
// start, the answer part starts after the first close and the body after
// the last (a quoted close before the real one, or after it, is then in
// the answer part, where a judge's verdict may not disagree with itself).
// A close that the reply did not open ends the reasoning too, but the
// response a judge quotes may hold one just as well, anywhere: the body
// starts after the last, and the whole reply is the answer part. A reply
// that opens its reasoning and never closes it was cut off: an error.
// A <think> elsewhere is text (a quoted response may hold one).
func newReply(text string) (reply, error) {
	r := reply{orig: text, body: text}
	lead := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	for _, f := range reasoningFormats {
		if !strings.HasPrefix(text[lead:], f.open) {
			continue
		}
		first := strings.Index(text[lead:], f.close)
		if first < 0 {
			if f.mustClose {
				return r, parseErr(r.lineAt(lead), 0, "", "the reply opens a %s block that is never closed; the reasoning did not finish", f.open)
			}
			continue
		}
		last := strings.LastIndex(text, f.close)
		r.answerFrom = lead + first + len(f.close)
		r.base = last + len(f.close)
		r.body = text[r.base:]
		return r, nil
	}
	for _, c := range bareCloses {
		if i := lastIndex(text, c); i >= 0 && i+len(c) > r.base {
			r.base = i + len(c)
		}
	}
	r.body = text[r.base:]
	return r, nil
}

// lastIndex is strings.LastIndex(s, sub) for a sub that s seldom holds:
// strings.Index finds the first occurrence with a vectorised search for
// sub's first byte, and the backward byte-by-byte hash of strings.LastIndex
// runs only over what follows it (and not at all when s has no sub, as a
// JSON reply without reasoning has not).
func lastIndex(s, sub string) int {
	first := strings.Index(s, sub)
	if first < 0 {
		return -1
	}
	return first + strings.LastIndex(s[first:], sub)
}

// answer is the answer part of r, as a reply whose body it is.
func (r reply) answer() reply {
	return reply{orig: r.orig, body: r.orig[r.answerFrom:], base: r.answerFrom, answerFrom: r.answerFrom}
}
