package prompts

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/rubricforge/rubricforge/schema"
)

// The satisfaction judge names the step an item is tied to. Students number
// their "### Step N:" headers from 0, skip numbers and start over when they
// correct themselves, so the number a header shows does not say which step
// it is. The judge is therefore shown each step opened by a tag that
// carries its position, and is told to name steps by the tag:
//
//	<step n="1">
//	### Step 0: Read the problem
//	...
//	<step n="2">
//	### Step 1: ...
//
// n counts the header lines schema.IsStepHeader finds, 1 for the first:
// the same numbering as the reward's step spans, so the step the judge names
// is the span that gets its credit. A step runs to the next tag or the end
// of the solution (no closing tag: each would cost a group's prefix cache
// its characters once per step and response). Text before the first
// header is shown untagged. Each tag is on a line of its own, and text in
// the solution that could pass for one of the templates' tags is escaped
// (escapeTags), so only our tags are tags. When the solution is over the
// judge's budget its middle is left out (fitResponse): the headers there
// still count, and the tail's first step is opened again after the line
// that says what was cut, so every step shown keeps its position.

// tagSteps is solution as the satisfaction judge is shown it whole.
func tagSteps(solution string) string {
	return tagStepsHiding(solution, len(solution), len(solution), "")
}

// tagStepsHiding is solution as the satisfaction judge is shown it with the
// bytes from to to left out and the line note in their place (from == to:
// nothing left out).
func tagStepsHiding(solution string, from, to int, note string) string {
	var b strings.Builder
	b.Grow(len(solution) + len(solution)/8 + len(note))
	list := escapeOffsets(solution)
	esc := &escapes{list: list}
	step, off := 0, 0
	tailStep, tailOpen := 0, false // the step the tail starts in; whether its first line opens it
	// The part before the cut.
	for line := range strings.Lines(solution) {
		a, e := off, off+len(line)
		off = e
		if schema.IsStepHeader(line) {
			step++
			if a < from {
				openStep(&b, step)
			}
			if a == to {
				tailOpen = true
			}
		}
		if a < to {
			tailStep = step
		}
		if a < from {
			writeRange(&b, solution, a, min(e, from), esc)
		}
	}
	if from >= to {
		return b.String()
	}
	// The note, then the part after the cut, its steps numbered on.
	newLine(&b)
	b.WriteString(note)
	b.WriteByte('\n')
	if tailStep > 0 && !tailOpen {
		openStep(&b, tailStep)
	}
	step, off = 0, 0
	esc = &escapes{list: list}
	for line := range strings.Lines(solution) {
		a, e := off, off+len(line)
		off = e
		if schema.IsStepHeader(line) {
			step++
			if a >= to {
				openStep(&b, step)
			}
		}
		if e > to {
			writeRange(&b, solution, max(a, to), e, esc)
		}
	}
	return b.String()
}

// openStep writes the tag that opens step n, on a line of its own.
func openStep(b *strings.Builder, n int) {
	newLine(b)
	b.WriteString(`<step n="`)
	b.WriteString(strconv.Itoa(n))
	b.WriteString("\">\n")
}

// newLine ends the line b is on, unless b is empty or at a line's start.
func newLine(b *strings.Builder) {
	if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// escape is a byte of a judged text written otherwise: the '<' opening a
// template tag as "&lt;", the '[' opening what could pass for a boundary
// line as "&#91;".
type escape struct {
	at   int
	with string
}

// escapeOffsets lists, in order, the bytes of s escapeTags writes
// otherwise.
func escapeOffsets(s string) []escape {
	var out []escape
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '<' && opensTemplateTag(s[i+1:]):
			out = append(out, escape{i, "&lt;"})
		case s[i] == '[' && opensBoundary(s[i:]):
			out = append(out, escape{i, "&#91;"})
		}
	}
	return out
}

// opensTemplateTag reports whether rest, the text after a '<', makes it
// one of the templates' tags: white space (line breaks too) and a '/'
// allowed before the name, any case.
func opensTemplateTag(rest string) bool {
	rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	rest = strings.TrimPrefix(rest, "/")
	rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	for _, name := range templateTags {
		if len(rest) >= len(name) && strings.EqualFold(rest[:len(name)], name) {
			return true
		}
	}
	return false
}

// escapes are a text's escapes (escapeOffsets) read in order by the
// ranges written: the ranges of one pass over the text come in order, so
// each escape is looked at once.
type escapes struct {
	list []escape
	next int
}

// writeRange writes s[lo:hi] with the escapes in that range; a range
// starts at or after the end of the one before.
func writeRange(b *strings.Builder, s string, lo, hi int, esc *escapes) {
	for esc.next < len(esc.list) && esc.list[esc.next].at < lo {
		esc.next++
	}
	for ; esc.next < len(esc.list) && esc.list[esc.next].at < hi; esc.next++ {
		e := esc.list[esc.next]
		b.WriteString(s[lo:e.at])
		b.WriteString(e.with)
		lo = e.at + 1
	}
	b.WriteString(s[lo:hi])
}

// writeEscaped writes s as escapeTags does.
func writeEscaped(b *strings.Builder, s string) {
	writeRange(b, s, 0, len(s), &escapes{list: escapeOffsets(s)})
}
