package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// fastGroup decodes the usual shape of a /v1/score_group body in one pass,
// with the responses unquoted into sc and returned as views of its memory,
// valid until sc is reused: a JSON object whose keys are spelled exactly as
// groupRequest's tags, string values, a list of strings for responses and
// any JSON value for prompt, label, finish_reasons, the loops' fields and unknown keys. It reports false for
// anything else (invalid JSON, null, another type, a repeated key, a key in
// another case or with escapes, invalid UTF-8 or a lone surrogate in a
// string), which encoding/json then decodes, so that its results and error
// messages stay the only ones.
func fastGroup(body []byte, req *groupRequest, sc *groupScratch) bool {
	sc.resetResponses()
	d := jsonScan{b: body}
	if !d.byte('{') {
		return false
	}
	ok := d.byte('}') || d.members(func(key []byte) bool { return d.groupField(key, req, sc) })
	if !ok || d.skipSpace() < len(body) {
		return false
	}
	if sc.seen&fieldResponses != 0 {
		req.Responses = sc.views()
	}
	return true
}

// Bits of groupScratch.seen, one per groupRequest field.
const (
	fieldRequestID = 1 << iota
	fieldProblemID
	fieldQuestion
	fieldPrompt
	fieldLabel
	fieldResponses
	fieldScheme
	fieldFinishReasons
	fieldProposals
	fieldProposalsMode
	fieldGuide
	fieldOffPolicy
)

// groupFields are groupRequest's JSON keys.
var groupFields = map[string]int{
	"request_id": fieldRequestID, "problem_id": fieldProblemID, "question": fieldQuestion,
	"prompt": fieldPrompt, "label": fieldLabel, "responses": fieldResponses, "scheme": fieldScheme,
	"finish_reasons": fieldFinishReasons,
	"proposals":      fieldProposals, "proposals_mode": fieldProposalsMode, "guide": fieldGuide, "off_policy": fieldOffPolicy,
}

// groupField decodes the value of key into req (the responses into sc).
func (d *jsonScan) groupField(key []byte, req *groupRequest, sc *groupScratch) bool {
	f, known := groupFields[string(key)]
	switch {
	case !known:
		for name := range groupFields {
			if bytes.EqualFold(key, []byte(name)) {
				return false // encoding/json matches it case-insensitively
			}
		}
		_, ok := d.value()
		return ok
	case sc.seen&f != 0:
		return false
	}
	sc.seen |= f
	var ok bool
	switch f {
	case fieldRequestID:
		req.RequestID, ok = d.string()
	case fieldProblemID:
		req.ProblemID, ok = d.string()
	case fieldQuestion:
		req.Question, ok = d.string()
	case fieldScheme:
		req.Scheme, ok = d.string()
	case fieldPrompt:
		req.Prompt, ok = d.value()
	case fieldLabel:
		req.Label, ok = d.value()
	case fieldFinishReasons:
		req.FinishReasons, ok = d.value()
	case fieldProposals:
		req.Proposals, ok = d.value()
	case fieldProposalsMode:
		req.ProposalsMode, ok = d.value()
	case fieldGuide:
		req.Guide, ok = d.value()
	case fieldOffPolicy:
		req.OffPolicy, ok = d.value()
	case fieldResponses:
		ok = d.byte('[') && (d.byte(']') || d.elements(func() bool { return d.appendString(sc) }))
	}
	return ok
}

// appendString unquotes the next JSON string onto sc.
func (d *jsonScan) appendString(sc *groupScratch) bool {
	var ok bool
	sc.buf, ok = d.unquote(sc.buf)
	sc.ends = append(sc.ends, len(sc.buf))
	return ok
}

// views are the collected strings, sharing sc's memory. They hold only
// until sc goes back to the pool: nothing that outlives the request (a
// cache, a log line, a goroutine) may keep one, or a substring of one,
// without strings.Clone.
func (sc *groupScratch) views() []string {
	out := make([]string, len(sc.ends))
	start := 0
	for i, end := range sc.ends {
		if end > start {
			out[i] = unsafe.String(&sc.buf[start], end-start)
		}
		start = end
	}
	return out
}

// jsonScan reads JSON text left to right; its methods skip the white space
// before what they read and report false where the text is not what they
// expect or not JSON.
type jsonScan struct {
	b []byte
	i int
}

func (d *jsonScan) skipSpace() int {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return d.i
		}
	}
	return d.i
}

// byte consumes c if it comes next.
func (d *jsonScan) byte(c byte) bool {
	if d.skipSpace() < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// members reads `"key": value` pairs up to the closing '}', after the '{'
// and a first member; member reads each value.
func (d *jsonScan) members(member func(key []byte) bool) bool {
	for {
		key, ok := d.asciiKey()
		if !ok || !d.byte(':') || !member(key) {
			return false
		}
		if d.byte('}') {
			return true
		}
		if !d.byte(',') {
			return false
		}
	}
}

// elements reads the values of a list up to the closing ']', after the '['
// and a first value; element reads each one.
func (d *jsonScan) elements(element func() bool) bool {
	for {
		if !element() {
			return false
		}
		if d.byte(']') {
			return true
		}
		if !d.byte(',') {
			return false
		}
	}
}

// asciiKey reads a key of printable ASCII without escapes.
func (d *jsonScan) asciiKey() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// string reads a JSON string.
func (d *jsonScan) string() (string, bool) {
	var store [64]byte
	s, ok := d.unquote(store[:0])
	return string(s), ok
}

// unquote appends the next JSON string's content to dst, as encoding/json
// decodes it.
func (d *jsonScan) unquote(dst []byte) ([]byte, bool) {
	if !d.byte('"') {
		return dst, false
	}
	b := d.b
	for d.i < len(b) {
		start := d.i
		d.i = plainRun(b, d.i)
		dst = append(dst, b[start:d.i]...)
		if d.i == len(b) {
			break
		}
		switch c := b[d.i]; {
		case c == '"':
			d.i++
			return dst, true
		case c == '\\':
			var ok bool
			if dst, ok = d.escape(dst); !ok {
				return dst, false
			}
		case c < 0x20:
			return dst, false
		default:
			r, size := utf8.DecodeRune(b[d.i:])
			if r == utf8.RuneError && size == 1 {
				return dst, false
			}
			dst = append(dst, b[d.i:d.i+size]...)
			d.i += size
		}
	}
	return dst, false
}

// plainRun is where the run of printable ASCII other than '"' and '\\' that
// starts at b[i] ends: eight bytes at a time, then one at a time.
func plainRun(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := func(x uint64, n byte) bool { return (x-ones*uint64(n))&^x&highs != 0 } // a byte of x is < n (< 0x80)
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if x&highs != 0 || less(x, 0x20) || less(x^(ones*'"'), 1) || less(x^(ones*'\\'), 1) {
			break
		}
	}
	for i < len(b) && b[i] >= 0x20 && b[i] < utf8.RuneSelf && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}

// escape appends the character of the escape sequence at d.i.
func (d *jsonScan) escape(dst []byte) ([]byte, bool) {
	if d.i+1 >= len(d.b) {
		return dst, false
	}
	c := d.b[d.i+1]
	d.i += 2
	switch c {
	case '"', '\\', '/':
		return append(dst, c), true
	case 'b':
		return append(dst, '\b'), true
	case 'f':
		return append(dst, '\f'), true
	case 'n':
		return append(dst, '\n'), true
	case 'r':
		return append(dst, '\r'), true
	case 't':
		return append(dst, '\t'), true
	case 'u':
		r, ok := d.hex4()
		if !ok {
			return dst, false
		}
		if utf16.IsSurrogate(r) {
			if d.i+1 >= len(d.b) || d.b[d.i] != '\\' || d.b[d.i+1] != 'u' {
				return dst, false
			}
			d.i += 2
			low, ok := d.hex4()
			if r = utf16.DecodeRune(r, low); !ok || r == utf8.RuneError {
				return dst, false
			}
		}
		return utf8.AppendRune(dst, r), true
	}
	return dst, false
}

// hex4 reads the four hex digits of a \u escape.
func (d *jsonScan) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

// value reads any JSON value and returns its text.
func (d *jsonScan) value() (json.RawMessage, bool) {
	start := d.skipSpace()
	depth := 0
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case '"':
			if !d.skipString() {
				return nil, false
			}
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			if depth == 0 {
				return d.valid(start)
			}
			depth--
			d.i++
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return d.valid(start)
			}
			d.i++
		default:
			d.i++
		}
		if depth == 0 && d.i > start && (d.b[d.i-1] == '"' || d.b[d.i-1] == '}' || d.b[d.i-1] == ']') {
			return d.valid(start)
		}
	}
	return d.valid(start)
}

// valid is the text from start to d.i, when it is one JSON value.
func (d *jsonScan) valid(start int) (json.RawMessage, bool) {
	raw := d.b[start:d.i:d.i]
	return raw, len(raw) > 0 && json.Valid(raw)
}

// skipString moves past the string at d.i.
func (d *jsonScan) skipString() bool {
	for d.i++; d.i < len(d.b); d.i++ {
		switch d.b[d.i] {
		case '\\':
			d.i++
		case '"':
			d.i++
			return true
		}
	}
	return false
}
