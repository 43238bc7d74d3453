package prompts

import (
	"strconv"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// The satisfaction judge names the step an item is tied to. Students number
// their "### Step N:" headers from 0, skip numbers and start over when they
// correct themselves, so the number a header shows does not say which step
// it is. The judge is therefore shown each step wrapped in a tag that
// carries its position, and is told to name steps by the tag:
//
//	<step n="1">
//	### Step 0: Read the problem
//	...
//	</step>
//	<step n="2">
//	### Step 1: ...
//	</step>
//
// n counts the header lines schema.IsStepHeader finds, 1 for the first:
// the same numbering as the reward's step spans, so the step the judge names
// is the span that gets its credit. Text before the first header is shown
// untagged. Each tag is on a line of its own, and text in the solution
// that could pass for a tag ("<step" or "</step", in any case) is shown
// with its '<' as "&lt;", so only our tags are tags.

// tagSteps is solution as the satisfaction judge is shown it.
func tagSteps(solution string) string {
	var b strings.Builder
	b.Grow(len(solution) + len(solution)/8)
	step := 0
	for line := range strings.Lines(solution) {
		if schema.IsStepHeader(line) {
			if step > 0 {
				closeStep(&b)
				b.WriteByte('\n')
			}
			step++
			b.WriteString(`<step n="`)
			b.WriteString(strconv.Itoa(step))
			b.WriteString("\">\n")
		}
		writeEscaped(&b, line)
	}
	if step > 0 {
		closeStep(&b)
	}
	return b.String()
}

// closeStep ends the open step tag on a line of its own.
func closeStep(b *strings.Builder) {
	if s := b.String(); !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("</step>")
}

// writeEscaped writes s with the '<' of every "<step" and "</step" (any
// case) written as "&lt;".
func writeEscaped(b *strings.Builder, s string) {
	for {
		i := indexTagLike(s)
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		b.WriteString("&lt;")
		s = s[i+1:]
	}
}

// indexTagLike is the offset of the first '<' in s that opens "<step" or
// "</step" in any case, or -1.
func indexTagLike(s string) int {
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '<')
		if i < 0 {
			return -1
		}
		at := off + i
		rest := s[at+1:]
		rest = strings.TrimPrefix(rest, "/")
		if len(rest) >= 4 && strings.EqualFold(rest[:4], "step") {
			return at
		}
		off = at + 1
	}
}
