package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rubricforge/rubricforge/internal/jsonscan"
)

// ExtractJSON finds JSON inside a model reply that may wrap it in prose or a
// ```json fence. It returns the first span that starts with open ('[' or '{'),
// is balanced (brackets inside JSON strings, with their escapes, do not
// count) and parses as JSON. The reply's reasoning (a <think> block, gpt-oss
// Harmony channels, text before a </think>; see newReply) is skipped.
//
// When nothing qualifies, the *ParseError describes the most likely intended
// candidate, the longest one: not valid JSON (with the line of the fault),
// never closed (the reply was probably cut off) or closed by the wrong
// bracket.
//
// Each bracket is matched once and spans known to fail are not parsed again,
// so the scan stays close to linear even on adversarial input.
func ExtractJSON(text string, open byte) (string, error) {
	if open != '[' && open != '{' {
		return "", fmt.Errorf("schema: ExtractJSON: open must be '[' or '{', got %q", open)
	}
	r, err := newReply(text)
	if err != nil {
		return "", err
	}
	s, _, err := findJSON(r, open, nil)
	return s, err
}

// findJSON returns the first candidate span accepted by accept (nil accepts
// any valid JSON) and its offset in r.body. accept gets the span and its
// offset.
func findJSON(r reply, open byte, accept func(r reply, span string, off int) error) (string, int, error) {
	span, at := "", -1
	err := eachJSON(r, open, accept, func(s string, off int) bool {
		span, at = s, off
		return false
	})
	return span, at, err
}

// eachJSON calls visit with every candidate span accepted by accept and its
// offset in r.body, in order, until visit returns false; a span inside an
// accepted one is not a candidate. When none is accepted, the error
// describes the most likely intended candidate (see ExtractJSON).
func eachJSON(r reply, open byte, accept func(r reply, span string, off int) error, visit func(span string, off int) bool) error {
	return scanJSON(r, open, accept, visit, nil)
}

// scanJSON is eachJSON that also calls broken, when not nil, with the
// offset of each candidate that is not JSON (not valid, never closed, or
// closed by the wrong bracket) and has the shape of a verdict
// (verdictShaped), and with a function building its error.
func scanJSON(r reply, open byte, accept func(r reply, span string, off int) error, visit func(span string, off int) bool,
	broken func(off int, why func() error)) error {
	return scanJSONWork(r, open, accept, visit, broken, nil)
}

// scanJSONWork is scanJSON that, when work is not nil, adds to *work the
// number of bytes it examines: each byte the candidate loop steps over, each
// byte a bracket scan or openAt walks, and each byte a validation or decode
// reads (up to the fault for an invalid span). The count is deterministic,
// so a test can bound the scan's cost by a multiple of len(r.body) where a
// wall-clock bound would flake on a loaded machine.
func scanJSONWork(r reply, open byte, accept func(r reply, span string, off int) error, visit func(span string, off int) bool,
	broken func(off int, why func() error), work *int) error {
	count := func(n int) {
		if work != nil {
			*work += n
		}
	}
	text := r.body
	what := "array"
	if open == '{' {
		what = "object"
	}
	// closeAt[i] for an open bracket at i: the index of its matching close, or
	// one of the failure codes below. Filled by scans from earlier starts.
	const (
		unclosed = -1
		mismatch = -2
		skipped  = -3
	)
	closeAt := make(map[int]int)
	failEnd := make(map[int]int) // for mismatch: where the wrong bracket is

	scan := func(start int) {
		var stack []int
		done := false
		stop := eachBracket(text, start, len(text), func(p int, c byte) bool {
			if c == '[' || c == '{' {
				stack = append(stack, p)
				return true
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if (text[top] == '[') != (c == ']') {
				for _, q := range append(stack, top) {
					if text[q] == open {
						closeAt[q] = mismatch
						failEnd[q] = p
					}
				}
				done = true
				return false
			}
			if text[top] == open {
				closeAt[top] = p
			}
			done = len(stack) == 0
			return !done
		})
		count(stop - start)
		if done {
			return
		}
		for _, q := range stack {
			if text[q] == open {
				closeAt[q] = unclosed
			}
		}
	}

	found := false
	// The error to report is built only for the longest failing candidate;
	// building one per candidate would cost a line count each.
	var best func() error
	bestLen := -1
	consider := func(length int, mk func() error) {
		if length > bestLen {
			best, bestLen = mk, length
		}
	}
	fault := func(i, length int, mk func() error) {
		consider(length, mk)
		if broken != nil && verdictShaped(text, i, open) {
			broken(i, mk)
		}
	}
	for i := 0; i < len(text); i++ {
		count(1)
		if text[i] != open {
			continue
		}
		end, ok := closeAt[i]
		if !ok {
			scan(i)
			end = closeAt[i]
		}
		switch end {
		case skipped:
			continue
		case unclosed:
			fault(i, len(text)-i, func() error {
				return parseErr(r.lineAt(i), 0, "", "the JSON %s that starts here is never closed; the reply may have been cut off", what)
			})
			continue
		case mismatch:
			p := failEnd[i]
			fault(i, p+1-i, func() error {
				return parseErr(r.lineAt(p), 0, "", "the JSON %s that starts on line %d is closed by the wrong bracket %q", what, r.lineAt(i), text[p])
			})
			continue
		}
		span := text[i : end+1]
		if !jsonscan.Valid(span) {
			var v any
			err := json.Unmarshal([]byte(span), &v)
			count(2 * readUpTo(span, err)) // jsonscan.Valid, then json.Unmarshal
			fault(i, len(span), func() error { return jsonSyntaxErr(r, i, what, err) })
			// The parse from i consumed every bracket it met before the fault
			// as the start of a value, so each span that starts before the
			// fault either ends before it (and is valid) or contains it (and
			// fails there too). Skip the latter; this keeps the scan linear.
			var se *json.SyntaxError
			if errors.As(err, &se) && se.Offset > 0 {
				count(int(se.Offset) - 1)
				for _, q := range openAt(text, i, i+int(se.Offset)-1) {
					if q != i && text[q] == open {
						closeAt[q] = skipped
					}
				}
			}
			continue
		}
		count(len(span)) // jsonscan.Valid
		if accept != nil {
			count(len(span)) // accept decodes the span
			if err := accept(r, span, i); err != nil {
				consider(len(span), func() error { return err })
				continue
			}
		}
		found = true
		if !visit(span, i) {
			return nil
		}
		i = end // the next candidate starts after this one
	}
	switch {
	case found:
		return nil
	case best != nil:
		return best()
	}
	return parseErr(0, 0, "", "the reply contains no JSON %s", what)
}

// verdictShaped reports whether the bracket open at i of text opens what
// looks like a judge's verdict: an array whose first element is an object
// ('[' then '{'), an object whose first member has a key ('{' then '"', or
// a key written as JavaScript or Python write one, bare or in single
// quotes, then ':' and the start of a value), white space between, or a
// bracket with nothing but white space after it (a reply cut off there). A
// bracket of prose or mathematics ("[sic]", "[0, 1)", "\frac{a}{b}",
// "{x : x > 0}") is not.
func verdictShaped(text string, i int, open byte) bool {
	j := skipSpace(text, i+1)
	switch {
	case j == len(text):
		return true
	case open == '[':
		return text[j] == '{'
	}
	return text[j] == '"' || looseKey(text, j)
}

// looseKey reports whether text at j holds a key written bare or in single
// quotes ('valid', valid), then ':' and the start of a JSON, JavaScript or
// Python value.
func looseKey(text string, j int) bool {
	k := j
	if text[k] == '\'' {
		end := strings.IndexByte(text[k+1:], '\'')
		if end < 0 {
			return false
		}
		k += end + 2
	} else {
		for k < len(text) && (text[k] == '_' || text[k]|0x20 >= 'a' && text[k]|0x20 <= 'z' || k > j && text[k] >= '0' && text[k] <= '9') {
			k++
		}
		if k == j {
			return false
		}
	}
	k = skipSpace(text, k)
	if k >= len(text) || text[k] != ':' {
		return false
	}
	k = skipSpace(text, k+1)
	if k == len(text) {
		return true
	}
	if strings.ContainsRune("\"'-[{0123456789", rune(text[k])) {
		return true
	}
	for _, lit := range []string{"true", "false", "null", "True", "False", "None"} {
		if strings.HasPrefix(text[k:], lit) {
			return true
		}
	}
	return false
}

func skipSpace(text string, j int) int {
	for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n') {
		j++
	}
	return j
}

// openAt returns the brackets open at byte end of text, scanning from start
// outside any string.
func openAt(text string, start, end int) []int {
	var stack []int
	eachBracket(text, start, end, func(p int, c byte) bool {
		switch c {
		case '[', '{':
			stack = append(stack, p)
		default:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		return true
	})
	return stack
}

// eachBracket calls visit for every bracket of text[start:end] that lies
// outside a JSON string, until visit returns false, and returns the index
// after the last byte it examined.
func eachBracket(text string, start, end int, visit func(p int, c byte) bool) int {
	inString, escaped := false, false
	p := start
	for ; p < end && p < len(text); p++ {
		c := text[p]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{', ']', '}':
			if !visit(p, c) {
				return p + 1
			}
		}
	}
	return p
}

// readUpTo returns how many bytes of span a decoder read before failing
// with err: up to the fault for a syntax error, all of span otherwise.
func readUpTo(span string, err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(span) {
		return int(se.Offset)
	}
	return len(span)
}

// jsonSyntaxErr turns a decoding error of the span at off into a ParseError
// naming the line of the fault.
func jsonSyntaxErr(r reply, off int, what string, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		at := off + int(se.Offset) - 1
		if at < off {
			at = off
		}
		return parseErr(r.lineAt(at), 0, "", "the JSON %s is not valid JSON: %v", what, se)
	}
	return parseErr(r.lineAt(off), 0, "", "the JSON %s is not valid JSON: %v", what, err)
}
