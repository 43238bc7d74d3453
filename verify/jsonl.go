package verify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxLineBytes bounds one input line of [VerifyJSONL].
const DefaultMaxLineBytes = 4 << 20

// JSONLOptions configures [VerifyJSONL].
type JSONLOptions struct {
	// Extract reads {"text"} lines and writes the extracted answer instead of comparing
	// {"gold", "pred"} lines.
	Extract bool
	// MaxLineBytes bounds one line (0: DefaultMaxLineBytes); a longer line is a bad line.
	MaxLineBytes int
	// BadLine, when set, is told about every bad line (1-based line number).
	BadLine func(line int, err error)
}

// JSONLStats counts what [VerifyJSONL] read.
type JSONLStats struct {
	Lines int // input lines, bad ones included
	Bad   int // lines that were not a usable JSON object
	Equal int // comparisons that said equal (or, with Extract, answers found)
}

// verifyLine is one input line; fields stay raw until they are read as text.
type verifyLine struct {
	ID   json.RawMessage `json:"id"`
	Gold json.RawMessage `json:"gold"`
	Pred json.RawMessage `json:"pred"`
	Text json.RawMessage `json:"text"`
	// FinishReason, optional, is how the solution ended ("stop", "length", ...); see [Options].
	FinishReason json.RawMessage `json:"finish_reason"`
}

// finishOf reads the optional finish_reason field: a string, or absent or null when unknown.
func finishOf(raw json.RawMessage) (Options, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return Options{}, nil
	}
	var f string
	if raw[0] != '"' || json.Unmarshal(raw, &f) != nil {
		return Options{}, errors.New(`field "finish_reason" must be a string`)
	}
	return Options{FinishReason: f}, nil
}

// textOf reads a field as text: a JSON string, or a number as written (a gold answer of 42).
func textOf(name string, raw json.RawMessage) (string, error) {
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return "", fmt.Errorf("missing field %q", name)
	case raw[0] == '"':
		if bytes.IndexByte(raw, '\\') < 0 {
			return string(raw[1 : len(raw)-1]), nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("field %q: %v", name, err)
		}
		return s, nil
	case raw[0] == '-' || isDigit(raw[0]):
		return string(raw), nil
	}
	return "", fmt.Errorf("field %q must be a string or a number", name)
}

// VerifyJSONL reads JSON lines from r and writes one JSON line per input line to w, in order.
// Each input is {"gold", "pred", "id" (optional)} and gives {"id", "equal", "method",
// "gold_norm", "pred_norm"} (see [CompareWith]); with opt.Extract each input is {"text", "id"}
// and gives {"id", "answer", "ok", "method"} (see [ExtractWith]). An optional "finish_reason"
// string says how the solution ended; without it only a text that stops inside math, a box or
// its <think> counts as cut off (see [Options]). A line that is not such an
// object gives {"line": N, "error": "..."}, so that output lines stay aligned with input lines,
// and is reported to opt.BadLine. The error is non-nil only when reading or writing failed.
func VerifyJSONL(r io.Reader, w io.Writer, opt JSONLOptions) (JSONLStats, error) {
	maxLine := opt.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	in := bufio.NewReaderSize(r, 64<<10)
	out := bufio.NewWriterSize(w, 64<<10)
	var st JSONLStats
	buf := make([]byte, 0, 1024)
	for {
		line, tooLong, err := readLine(in, buf[:0], maxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return st, fmt.Errorf("read line %d: %w", st.Lines+1, err)
		}
		if len(line) == 0 && !tooLong && errors.Is(err, io.EOF) {
			break
		}
		buf = line[:0]
		st.Lines++
		res, lineErr := verifyOne(line, tooLong, maxLine, opt.Extract)
		if lineErr != nil {
			st.Bad++
			res = appendLineError(res[:0], st.Lines, lineErr)
			if opt.BadLine != nil {
				opt.BadLine(st.Lines, lineErr)
			}
		} else if res[len(res)-1] == 1 {
			st.Equal++
		}
		res[len(res)-1] = '\n'
		if _, werr := out.Write(res); werr != nil {
			return st, fmt.Errorf("write result of line %d: %w", st.Lines, werr)
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if err := out.Flush(); err != nil {
		return st, fmt.Errorf("write results: %w", err)
	}
	return st, nil
}

// readLine reads one line without its line break into buf. A line longer than max is read to
// its end and dropped, with tooLong set.
func readLine(in *bufio.Reader, buf []byte, max int) ([]byte, bool, error) {
	tooLong := false
	for {
		chunk, err := in.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+2 {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimRight(buf, "\r\n")
		return buf, tooLong, err
	}
}

// verifyOne decides one line. The result ends with a flag byte: 1 when the comparison said
// equal (or an answer was found), else 0; the caller replaces it by the line break.
func verifyOne(line []byte, tooLong bool, max int, extract bool) ([]byte, error) {
	if tooLong {
		return nil, fmt.Errorf("line longer than %d bytes", max)
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, errors.New("empty line")
	}
	if !utf8.Valid(line) {
		return nil, errors.New("not valid UTF-8")
	}
	if t := bytes.TrimSpace(line); t[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var in verifyLine
	if err := json.Unmarshal(line, &in); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	out := make([]byte, 0, 128)
	out = append(out, '{')
	if len(in.ID) > 0 && !bytes.Equal(in.ID, []byte("null")) {
		out = append(out, `"id":`...)
		out = append(out, in.ID...)
		out = append(out, ',')
	}
	opt, err := finishOf(in.FinishReason)
	if err != nil {
		return nil, err
	}
	if extract {
		text, err := textOf("text", in.Text)
		if err != nil {
			return nil, err
		}
		a, method, ok := ExtractWith(text, opt)
		out = appendField(out, "answer", a, true)
		out = append(out, `"ok":`...)
		out = strconv.AppendBool(out, ok)
		out = append(out, ',')
		out = appendField(out, "method", method, false)
		return append(out, '}', equalFlag(ok)), nil
	}
	gold, err := textOf("gold", in.Gold)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(gold) == "" {
		return nil, errors.New(`field "gold" is empty: there is no answer to compare with`)
	}
	pred, err := textOf("pred", in.Pred)
	if err != nil {
		return nil, err
	}
	res := CompareWith(gold, pred, opt)
	out = append(out, `"equal":`...)
	out = strconv.AppendBool(out, res.Equal)
	out = append(out, ',')
	out = appendField(out, "method", res.Method, true)
	out = appendField(out, "gold_norm", res.Gold, true)
	out = appendField(out, "pred_norm", res.Pred, false)
	return append(out, '}', equalFlag(res.Equal)), nil
}

func equalFlag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func appendLineError(out []byte, line int, err error) []byte {
	out = append(out, `{"line":`...)
	out = strconv.AppendInt(out, int64(line), 10)
	out = append(out, ',')
	out = appendField(out, "error", err.Error(), false)
	return append(out, '}', 0)
}

// appendField writes "name":"value" and, when more follows, a comma.
func appendField(out []byte, name, value string, more bool) []byte {
	out = append(out, '"')
	out = append(out, name...)
	out = append(out, `":`...)
	out = appendJSONString(out, value)
	if more {
		out = append(out, ',')
	}
	return out
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(out []byte, s string) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				out = append(out, '\\', c)
			case c == '\n':
				out = append(out, '\\', 'n')
			case c == '\r':
				out = append(out, '\\', 'r')
			case c == '\t':
				out = append(out, '\\', 't')
			case c < 0x20:
				out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			out = append(out, `\u202`...)
			out = append(out, hexDigits[r&0xF])
		default:
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return append(out, '"')
}
