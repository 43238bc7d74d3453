package reward

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/schema"
)

// A response may say nothing without being white space: what a chat
// template, a reasoning switch or an answer format leaves when the model
// writes nothing of its own ("<think>\n\n</think>\n\n" from Qwen3 with
// thinking off, an empty \boxed{} or <answer></answer>, bare "### Step 1:"
// headers, an end token such as <|return|> or <eos>, a lone "?"). A judge
// shown such a response finds no PITFALL fallen into, so it would be paid
// the PITFALLs' share (rgr, grounded) or more than an honest wrong answer
// (srar): silence would pay. Silent tells such a response apart, and it is
// paid as an empty one (Rollout.Empty): not judged, the floor.

// Silent reports whether response says nothing: it holds no letter, digit
// or symbol of its own once markup is set aside. Markup is white space,
// punctuation, tags without attributes (<think>, </answer>, <eos>, </s>),
// special tokens (<|return|>, <｜end▁of▁sentence｜>), the LaTeX commands
// that only wrap or space an answer (\boxed, \fbox, \text, \mathrm,
// \textbf, \mathbf, \displaystyle, \quad, and a backslash before
// punctuation such as \[ or \,), the math and code delimiters $ ^ ` ~ |,
// the "### Step N:" of a step header (schema.IsStepHeader) and the labels
// "Answer" and "Final Answer". Anything else, a word, a number or a
// mathematical symbol such as ∅, is something said. It stops at the first
// such thing, so a response that says something costs a few bytes' scan.
func Silent(response string) bool {
	s := response
	for i := 0; i < len(s); {
		c := s[i]
		var n int
		switch {
		case c == '<':
			n = markupTag(s[i:])
		case c == '\\':
			n = wrapperCommand(s[i:])
		case c < utf8.RuneSelf && isASCIILetter(c):
			n = max(stepHeaderWord(s, i), answerLabel(s[i:]))
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) || unicode.IsPunct(r) || strings.ContainsRune("$^`~|", r) {
				n = size
			}
		}
		if n == 0 {
			return false
		}
		i += n
	}
	return true
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// markupTag is the length of the tag or special token s starts with, 0 when
// it starts with neither: <name>, </name> (a letter, then letters, digits,
// '_' and '-'), <|token|> and <｜token｜> (no space inside, at most 64 bytes).
func markupTag(s string) int {
	for _, p := range [][2]string{{"<|", "|>"}, {"<｜", "｜>"}} {
		if rest, ok := strings.CutPrefix(s, p[0]); ok {
			end := strings.Index(rest, p[1])
			if end < 0 || end > 64 || strings.ContainsAny(rest[:end], " \t\r\n<>") {
				return 0
			}
			return len(p[0]) + end + len(p[1])
		}
	}
	i := 1
	if i < len(s) && s[i] == '/' {
		i++
	}
	if i >= len(s) || !isASCIILetter(s[i]) {
		return 0
	}
	for i < len(s) && (isASCIILetter(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '_' || s[i] == '-') {
		i++
	}
	if i < len(s) && s[i] == '>' {
		return i + 1
	}
	return 0
}

// wrappers are the LaTeX commands that wrap, space or format an answer
// without being one.
var wrappers = []string{"boxed", "fbox", "text", "textbf", "mathrm", "mathbf", "displaystyle", "quad", "qquad", "left", "right"}

// wrapperCommand is the length of the wrapping LaTeX command s starts with
// (s[0] is a backslash), 0 for any other: a backslash before punctuation
// (\[, \], \(, \), \,, \;, \!, \\) or one of wrappers, not followed by a
// letter.
func wrapperCommand(s string) int {
	if len(s) < 2 {
		return 0
	}
	if r, size := utf8.DecodeRuneInString(s[1:]); unicode.IsPunct(r) || unicode.IsSpace(r) {
		return 1 + size
	}
	end := 1
	for end < len(s) && isASCIILetter(s[end]) {
		end++
	}
	for _, w := range wrappers {
		if s[1:end] == w {
			return end
		}
	}
	return 0
}

// stepHeaderWord is the length from i, the start of a word, to past the
// colon of the step header whose "Step" it is, 0 when it is not one.
func stepHeaderWord(s string, i int) int {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	if strings.Trim(s[start:i], " \t#") != "" {
		return 0
	}
	end := len(s)
	if k := strings.IndexByte(s[i:], '\n'); k >= 0 {
		end = i + k
	}
	if !schema.IsStepHeader(s[start:end]) {
		return 0
	}
	return strings.IndexByte(s[i:end], ':') + 1
}

// answerLabel is the length of the label "Answer" or "Final Answer" (any
// case, any white space between) s starts with, 0 when it does not start
// with one ending there.
func answerLabel(s string) int {
	n := 0
	if len(s) >= 5 && strings.EqualFold(s[:5], "final") {
		n = 5
		for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
			n++
		}
		if n == 5 {
			return 0
		}
	}
	if len(s) < n+6 || !strings.EqualFold(s[n:n+6], "answer") {
		return 0
	}
	n += 6
	if n < len(s) && isASCIILetter(s[n]) {
		return 0
	}
	return n
}
