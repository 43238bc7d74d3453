package schema

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseError says what was wrong with a model's reply, precisely enough to be
// shown back to the model in a repair prompt. Zero fields are left out of the
// message. Line counts from 1 in the reply as received (before any <think>
// block was cut off); Item counts from 1 in the order the reply lists items.
//
// Parsers return *ParseError only for faults in the reply. A fault of the
// caller (bad options, duplicate ids asked for) is a plain error, so it can be
// told apart with errors.As.
type ParseError struct {
	Line  int
	Item  int
	Field string
	Msg   string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Item > 0 {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString("item ")
		b.WriteString(strconv.Itoa(e.Item))
	}
	if e.Field != "" {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString("field ")
		b.WriteString(strconv.Quote(e.Field))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func parseErr(line, item int, field, format string, args ...any) *ParseError {
	return &ParseError{Line: line, Item: item, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// reply is a model reply with its reasoning cut off. base is the byte
// offset of body in the original text, so errors can name original lines.
// answerFrom is where the part of the reply that may hold its answer starts
// (answerFrom <= base): a judge's verdict is taken there, and two different
// verdicts there fail the judgment (see judgeVerdict).
type reply struct {
	orig       string
	body       string
	base       int
	answerFrom int
}

// lineAt returns the 1-based line of byte offset off in body.
func (r reply) lineAt(off int) int {
	off += r.base
	if off > len(r.orig) {
		off = len(r.orig)
	}
	return 1 + strings.Count(r.orig[:off], "\n")
}

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// checkUTF8 reports the line of the first invalid UTF-8 byte in text.
func checkUTF8(r reply) error {
	if utf8.ValidString(r.body) {
		return nil
	}
	for i, c := range r.body {
		if c == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(r.body[i:]); size <= 1 {
				return parseErr(r.lineAt(i), 0, "", "the reply is not valid UTF-8")
			}
		}
	}
	return parseErr(0, 0, "", "the reply is not valid UTF-8")
}

// collapseSpace trims s and replaces every run of white space with one space.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// excerpt quotes the start of s for an error message.
func excerpt(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) > max {
		rs := []rune(s)
		s = string(rs[:max]) + "..."
	}
	return strconv.Quote(s)
}
