// Package jsonscan walks JSON that encoding/json has already validated:
// an object into its members, an array into its elements, a string literal
// into the Go string encoding/json would decode. Decoding each nested level
// with encoding/json instead re-scans and re-validates every byte once per
// level; the model-output parsers (schema) and the simulated endpoint's
// request reader (internal/sim) split what they validated once with
// these. On input that is not what a function expects it returns
// ErrNotJSON (or false) rather than guess, and it never reads out of range.
package jsonscan

import (
	"bytes"
	"errors"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// ErrNotJSON is returned for input that is not the JSON a function expects.
var ErrNotJSON = errors.New("not valid JSON")

// isSpace is JSON's white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte at or after p that is not
// JSON white space.
func SkipSpace[T string | []byte](b T, p int) int {
	for p < len(b) && isSpace(b[p]) {
		p++
	}
	return p
}

// stringEnd returns the index just past the JSON string that opens at
// b[p] (a '"'). Prose between escapes is long, and bytes.IndexByte finds the
// quotes and backslashes in it a vector at a time; JSON quoted inside a
// string (a judge's or a generator's reply in the response's content) has
// an escape every few bytes, where a call per escape costs more than
// looking at the bytes. So after each escape the next shortRun bytes are
// looked at one by one, and only a longer run goes to IndexByte.
func stringEnd(b []byte, p int) (int, error) {
	p++
	q := -1 // the first '"' at or after p, once found
	for p < len(b) {
		for stop := min(p+shortRun, len(b)); p < stop; p++ {
			switch b[p] {
			case '"':
				return p + 1, nil
			case '\\':
				p++
			}
		}
		if p >= len(b) {
			break
		}
		if q < p {
			i := bytes.IndexByte(b[p:], '"')
			if i < 0 {
				return len(b), ErrNotJSON
			}
			q = p + i
		}
		i := bytes.IndexByte(b[p:q], '\\')
		if i < 0 {
			return q + 1, nil
		}
		p += i + 2 // the backslash and the byte it escapes
	}
	return len(b), ErrNotJSON
}

// shortRun is how many bytes after an escape stringEnd reads one by one
// before it searches with bytes.IndexByte.
const shortRun = 32

// valueEnd returns the index just past the JSON value that starts at b[p].
func valueEnd(b []byte, p int) (int, error) {
	if p >= len(b) {
		return p, ErrNotJSON
	}
	switch b[p] {
	case '"':
		return stringEnd(b, p)
	case '{', '[':
		depth := 0
		for ; p < len(b); p++ {
			switch b[p] {
			case '"':
				end, err := stringEnd(b, p)
				if err != nil {
					return end, err
				}
				p = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return p + 1, nil
				}
			}
		}
		return len(b), ErrNotJSON
	}
	start := p // a number, true, false or null
	for p < len(b) && !isSpace(b[p]) && b[p] != ',' && b[p] != '}' && b[p] != ']' && b[p] != ':' {
		p++
	}
	if p == start {
		return p, ErrNotJSON
	}
	return p, nil
}

// EachElement calls visit with every element of the JSON array raw and the
// offset where the element starts, in order, until visit returns an error.
func EachElement(raw []byte, visit func(elem []byte, at int) error) error {
	return eachItem(raw, '[', ']', func(p int) (int, error) {
		end, err := valueEnd(raw, p)
		if err != nil {
			return end, err
		}
		return end, visit(raw[p:end], p)
	})
}

// EachMember calls visit with every member of the JSON object raw (its key
// unquoted and its value as written), in order, until visit returns an
// error.
func EachMember(raw []byte, visit func(key string, val []byte) error) error {
	return eachItem(raw, '{', '}', func(p int) (int, error) {
		if raw[p] != '"' {
			return p, ErrNotJSON
		}
		kend, err := stringEnd(raw, p)
		if err != nil {
			return kend, err
		}
		key, ok := Unquote(raw[p:kend])
		if !ok {
			return kend, ErrNotJSON
		}
		if p = SkipSpace(raw, kend); p >= len(raw) || raw[p] != ':' {
			return p, ErrNotJSON
		}
		p = SkipSpace(raw, p+1)
		vend, err := valueEnd(raw, p)
		if err != nil {
			return vend, err
		}
		return vend, visit(key, raw[p:vend])
	})
}

// eachItem walks the array or object raw (opened by open, closed by
// closer): item reads the element or member at p and returns the index
// after it; between items it takes the commas.
func eachItem(raw []byte, open, closer byte, item func(p int) (int, error)) error {
	p := SkipSpace(raw, 0)
	if p >= len(raw) || raw[p] != open {
		return ErrNotJSON
	}
	if p = SkipSpace(raw, p+1); p < len(raw) && raw[p] == closer {
		return nil
	}
	for p < len(raw) {
		end, err := item(p)
		if err != nil {
			return err
		}
		if p = SkipSpace(raw, end); p >= len(raw) {
			break
		}
		switch raw[p] {
		case closer:
			return nil
		case ',':
			p = SkipSpace(raw, p+1)
		default:
			return ErrNotJSON
		}
	}
	return ErrNotJSON
}

// Unquote converts a JSON string literal, quotes included, into the Go
// string encoding/json would decode it to: escapes resolved, an unpaired
// surrogate escape and every byte of invalid UTF-8 as U+FFFD.
func Unquote(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	s = s[1 : len(s)-1]
	r := plainRun(s, 0)
	if r == len(s) {
		return string(s), true
	}
	b := make([]byte, r, len(s)+2*utf8.UTFMax)
	copy(b, s[:r])
	for r < len(s) {
		if end := plainRun(s, r); end > r {
			b, r = append(b, s[r:end]...), end
			continue
		}
		switch c := s[r]; {
		case c == '\\':
			var ok bool
			if b, r, ok = appendEscape(b, s, r); !ok {
				return "", false
			}
		case c < utf8.RuneSelf: // a quote or a control character
			return "", false
		default: // invalid UTF-8
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	// b is this call's own and never written again: the string takes its
	// bytes instead of a copy (as strings.Builder does), halving what an
	// escaped string costs to allocate.
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

// plainRun returns the end of the run of s from r that a JSON string holds
// as it is: no escape, quote or control character, valid UTF-8.
func plainRun(s []byte, r int) int {
	for r < len(s) {
		c := s[r]
		if c == '\\' || c == '"' || c < ' ' {
			return r
		}
		if c < utf8.RuneSelf {
			r++
			continue
		}
		rr, size := utf8.DecodeRune(s[r:])
		if rr == utf8.RuneError && size == 1 {
			return r
		}
		r += size
	}
	return r
}

// appendEscape appends what the escape at s[r] stands for to b and returns
// the index after it.
func appendEscape(b, s []byte, r int) ([]byte, int, bool) {
	if r+1 >= len(s) {
		return b, r, false
	}
	switch e := s[r+1]; e {
	case '"', '\\', '/', '\'':
		return append(b, e), r + 2, true
	case 'b':
		return append(b, '\b'), r + 2, true
	case 'f':
		return append(b, '\f'), r + 2, true
	case 'n':
		return append(b, '\n'), r + 2, true
	case 'r':
		return append(b, '\r'), r + 2, true
	case 't':
		return append(b, '\t'), r + 2, true
	case 'u':
		rr := hex4(s[r+2:])
		if rr < 0 {
			return b, r, false
		}
		r += 6
		if utf16.IsSurrogate(rr) {
			if r+1 < len(s) && s[r] == '\\' && s[r+1] == 'u' {
				if dec := utf16.DecodeRune(rr, hex4(s[r+2:])); dec != unicode.ReplacementChar {
					return utf8.AppendRune(b, dec), r + 6, true
				}
			}
			rr = unicode.ReplacementChar
		}
		return utf8.AppendRune(b, rr), r, true
	}
	return b, r, false
}

// hex4 reads the four hex digits of a \u escape, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var v rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		v = v*16 + rune(c)
	}
	return v
}

// CountElements returns the number of elements of the JSON array raw, or
// -1 when raw is not one.
func CountElements(raw []byte) int {
	n := 0
	if EachElement(raw, func([]byte, int) error { n++; return nil }) != nil {
		return -1
	}
	return n
}

// maxDepth is encoding/json's limit on nesting: deeper input is not valid.
const maxDepth = 10000

// Valid reports whether b is one JSON value with optional white space
// around it, exactly as json.Valid does (invalid UTF-8 inside strings is
// accepted, nesting deeper than 10,000 is not), in one pass of plain loops
// instead of encoding/json's scanner step per byte. It takes a string too,
// so a span of a reply is checked without copying it.
func Valid[T string | []byte](b T) bool {
	v := validator[T]{b: b}
	p, ok := v.value(SkipSpace(b, 0), 0)
	return ok && SkipSpace(b, p) == len(b)
}

type validator[T string | []byte] struct{ b T }

// value checks the value at p and returns the index after it.
func (v validator[T]) value(p, depth int) (int, bool) {
	b := v.b
	if p >= len(b) {
		return p, false
	}
	switch c := b[p]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return p, false
		}
		return v.composite(p, depth+1)
	case c == '"':
		return v.str(p)
	case c == '-' || c >= '0' && c <= '9':
		return v.number(p)
	case c == 't':
		return v.literal(p, "true")
	case c == 'f':
		return v.literal(p, "false")
	case c == 'n':
		return v.literal(p, "null")
	}
	return p, false
}

// composite checks the object or array that opens at p.
func (v validator[T]) composite(p, depth int) (int, bool) {
	b := v.b
	obj := b[p] == '{'
	closer := byte(']')
	if obj {
		closer = '}'
	}
	p = SkipSpace(b, p+1)
	if p < len(b) && b[p] == closer {
		return p + 1, true
	}
	for {
		var ok bool
		if obj {
			if p >= len(b) || b[p] != '"' {
				return p, false
			}
			if p, ok = v.str(p); !ok {
				return p, false
			}
			if p = SkipSpace(b, p); p >= len(b) || b[p] != ':' {
				return p, false
			}
			p = SkipSpace(b, p+1)
		}
		if p, ok = v.value(p, depth); !ok {
			return p, false
		}
		if p = SkipSpace(b, p); p >= len(b) {
			return p, false
		}
		switch b[p] {
		case ',':
			p = SkipSpace(b, p+1)
		case closer:
			return p + 1, true
		default:
			return p, false
		}
	}
}

// str checks the string that opens at p.
func (v validator[T]) str(p int) (int, bool) {
	b := v.b
	for p++; p < len(b); p++ {
		switch c := b[p]; {
		case c == '"':
			return p + 1, true
		case c < ' ':
			return p, false
		case c == '\\':
			if p+1 >= len(b) {
				return p, false
			}
			switch b[p+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p++
			case 'u':
				if p+5 >= len(b) || !isHex(b[p+2]) || !isHex(b[p+3]) || !isHex(b[p+4]) || !isHex(b[p+5]) {
					return p, false
				}
				p += 5
			default:
				return p, false
			}
		}
	}
	return p, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number checks the number that starts at p: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (v validator[T]) number(p int) (int, bool) {
	b := v.b
	if b[p] == '-' {
		p++
	}
	switch {
	case p < len(b) && b[p] == '0':
		p++
	case p < len(b) && isDigit(b[p]):
		for p < len(b) && isDigit(b[p]) {
			p++
		}
	default:
		return p, false
	}
	if p < len(b) && b[p] == '.' {
		p++
		if p >= len(b) || !isDigit(b[p]) {
			return p, false
		}
		for p < len(b) && isDigit(b[p]) {
			p++
		}
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		if p >= len(b) || !isDigit(b[p]) {
			return p, false
		}
		for p < len(b) && isDigit(b[p]) {
			p++
		}
	}
	return p, true
}

// literal checks that word is at p.
func (v validator[T]) literal(p int, word string) (int, bool) {
	if len(v.b)-p < len(word) {
		return p, false
	}
	for i := range len(word) {
		if v.b[p+i] != word[i] {
			return p, false
		}
	}
	return p + len(word), true
}

// Elements reads every element of the JSON array raw with read, in order;
// false when raw is not an array or read refuses an element.
func Elements[T any](raw []byte, read func(elem []byte) (T, bool)) ([]T, bool) {
	if p := SkipSpace(raw, 0); p >= len(raw) || raw[p] != '[' {
		return nil, false
	}
	out := make([]T, 0, 2)
	err := EachElement(raw, func(elem []byte, _ int) error {
		v, ok := read(elem)
		if !ok {
			return ErrNotJSON
		}
		out = append(out, v)
		return nil
	})
	return out, err == nil
}

// FoldsTo reports whether encoding/json would decode the member key into a
// field named one of names: it matches a key ignoring case. A reader that
// takes only exact keys leaves such a key to encoding/json.
func FoldsTo(key string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}
