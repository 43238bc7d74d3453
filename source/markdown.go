package source

import (
	"strings"
	"unicode"
)

// The blocks of a document, as the cutter, the outline, the heading paths
// and the title read them: one scan (scanBlocks) decides what is a heading,
// so a line that is no heading for one of them is none for the others.
// Markdown follows CommonMark where it matters for cutting: ATX and setext
// headings; fenced code blocks; HTML blocks that run to their end marker
// (comments, <pre>, <script>, <style>, <textarea>, processing instructions,
// CDATA), whose lines are never headings; pipe tables; and $$ display math,
// which is not CommonMark but is never cut inside either.

// blockKind is the kind of a block the cutter tells apart.
type blockKind int

const (
	blockParagraph blockKind = iota // any other run of lines up to a blank line
	blockHeading                    // an ATX or setext heading (Markdown), a section title (reStructuredText)
	blockFence                      // a fenced code block, fences included
	blockTable                      // a pipe table: header, delimiter row, rows
	blockVerbatim                   // an HTML comment or <pre> block, $$ math, an indented reStructuredText block: cut only when longer than a passage, at line ends, adding nothing
)

// block is one block of the text: src[start:end], from the start of its
// first line (its indentation included) to the last non-space character
// of its last line. head is the end of the lines a piece of the block
// repeats (a fence's opening line, a table's delimiter row); closeAt, of
// a closed fence, is where its closing line starts. A heading has its
// level (1 the top) and its text.
type block struct {
	kind          blockKind
	start, end    int
	head, closeAt int
	closer        string // a fence's closing line: its indentation and fence string
	level         int
	title         string
}

// syntax is how a document's text is read: Markdown (also plain text,
// which is read as Markdown without a title from its headings) or
// reStructuredText.
type syntax int

const (
	syntaxMarkdown syntax = iota
	syntaxRST
)

// scanBlocks splits src into its blocks by the rules of its syntax.
func scanBlocks(src string, sx syntax) []block {
	if sx == syntaxRST {
		return scanRST(src)
	}
	return scanMarkdownBlocks(src)
}

// scanMarkdownBlocks splits Markdown text into its blocks.
func scanMarkdownBlocks(src string) []block {
	var out []block
	for i := 0; i < len(src); {
		line, next := lineAt(src, i)
		var b block
		after := next
		switch {
		case strings.TrimSpace(line) == "":
			i = next
			continue
		case fenceOpen(line) != "":
			b, after = fenceBlock(src, i)
		case isHTMLOpen(line):
			b, after = verbatimBlock(src, i, htmlClosed(htmlOpen(line)))
		case mathBlockAt(src, i):
			b, after = verbatimBlock(src, i, mathClosed)
		case isHeading(line):
			level, title := headingOf(line)
			b = block{kind: blockHeading, start: i, end: trimEnd(src, i, i+len(line)), level: level, title: title}
		case tableStarts(src, i):
			b, after = tableBlock(src, i)
		default:
			b, after = paragraphBlock(src, i)
		}
		out = append(out, b)
		i = after
	}
	return out
}

// lineAt is the line starting at i, without its "\n", and where the next
// line starts.
func lineAt(src string, i int) (string, int) {
	if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
		return src[i : i+j], i + j + 1
	}
	return src[i:], len(src)
}

// trimEnd is the end of src[start:end] without its trailing white space.
func trimEnd(src string, start, end int) int {
	return start + len(strings.TrimRightFunc(src[start:end], unicode.IsSpace))
}

// indentOf is the number of leading spaces of line, a tab counting as
// reaching the next multiple of four.
func indentOf(line string) int {
	n := 0
	for _, c := range line {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4 - n%4
		default:
			return n
		}
	}
	return n
}

// isHeading: an ATX heading, up to three spaces, one to six '#', then a
// space, a tab or the end of the line.
func isHeading(line string) bool {
	level, _ := headingOf(line)
	return level > 0
}

// headingOf is the level (1-6) and text of an ATX heading line, the text
// without its closing sequence of '#' (one preceded by white space, or the
// whole text: "C#" keeps its '#'); level 0 for any other line.
func headingOf(line string) (level int, title string) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return 0, ""
	}
	n := len(s) - len(strings.TrimLeft(s, "#"))
	if n < 1 || n > 6 || (len(s) > n && s[n] != ' ' && s[n] != '\t') {
		return 0, ""
	}
	title = strings.TrimSpace(s[n:])
	if t := strings.TrimRight(title, "#"); t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t") {
		title = strings.TrimSpace(t)
	}
	return n, title
}

// setextLevel is the level of the heading a setext underline makes (1 for
// '=', 2 for '-'), or 0 when line is none: up to three spaces, a run of
// one of those characters, trailing white space.
func setextLevel(line string) int {
	if indentOf(line) > 3 {
		return 0
	}
	s := strings.TrimSpace(line)
	switch {
	case s == "":
		return 0
	case strings.Trim(s, "=") == "":
		return 1
	case strings.Trim(s, "-") == "":
		return 2
	}
	return 0
}

// startsContainer: a line that opens a list item or a block quote, which a
// setext underline does not turn into a heading (CommonMark reads "- a"
// above "---" as a list and a thematic break).
func startsContainer(line string) bool {
	s := strings.TrimLeft(line, " \t")
	if strings.HasPrefix(s, ">") {
		return true
	}
	if len(s) >= 2 && strings.ContainsRune("-*+", rune(s[0])) && (s[1] == ' ' || s[1] == '\t') {
		return true
	}
	d := len(s) - len(strings.TrimLeft(s, "0123456789"))
	return d > 0 && d <= 9 && len(s) > d+1 && (s[d] == '.' || s[d] == ')') && (s[d+1] == ' ' || s[d+1] == '\t')
}

// fenceOpen is the fence string (three or more '`' or '~') that opens a
// fenced code block on line, or "". A backtick fence's info string holds no
// backtick (else the line is inline code).
func fenceOpen(line string) string {
	s := strings.TrimLeft(line, " \t")
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := len(s) - len(strings.TrimLeft(s, s[:1]))
	if n < 3 || (s[0] == '`' && strings.Contains(s[n:], "`")) {
		return ""
	}
	return s[:n]
}

// closesFence: line is a fence of fence's character, at least as long,
// with nothing after it but white space.
func closesFence(line, fence string) bool {
	s := strings.TrimSpace(line)
	return len(s) >= len(fence) && strings.Trim(s, fence[:1]) == ""
}

// fenceBlock is the fenced block whose opening line starts at i, and where
// the text after it starts. An unclosed fence runs to the end of the text.
func fenceBlock(src string, i int) (block, int) {
	open, next := lineAt(src, i)
	fence := fenceOpen(open)
	indent := open[:len(open)-len(strings.TrimLeft(open, " \t"))]
	b := block{kind: blockFence, start: i, head: i + len(open), closeAt: -1, closer: indent + fence}
	for j := next; j < len(src); {
		line, after := lineAt(src, j)
		if closesFence(line, fence) {
			b.closeAt, b.end = j, trimEnd(src, j, j+len(line))
			return b, after
		}
		j = after
	}
	b.end = trimEnd(src, i, len(src))
	return b, len(src)
}

// htmlStarts are the HTML blocks that run to an end marker rather than to
// a blank line (CommonMark's HTML blocks of kinds 1, 2, 3 and 5), by what
// opens them; a tag name is followed by white space, '>' or the line end.
var htmlStarts = []struct{ open, end string }{
	{"<!--", "-->"},
	{"<![CDATA[", "]]>"},
	{"<?", "?>"},
	{"<pre", "</pre>"},
	{"<script", "</script>"},
	{"<style", "</style>"},
	{"<textarea", "</textarea>"},
}

// htmlOpen is the opening marker and the end marker of the HTML block
// line opens, or "", "".
func htmlOpen(line string) (open, end string) {
	if indentOf(line) > 3 {
		return "", ""
	}
	s := strings.TrimLeft(line, " ")
	for _, h := range htmlStarts {
		if len(s) < len(h.open) || !strings.EqualFold(s[:len(h.open)], h.open) {
			continue
		}
		if h.open[1] != '!' && h.open[1] != '?' { // a tag name: not a prefix of a longer name
			if rest := s[len(h.open):]; rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '>' {
				continue
			}
		}
		return h.open, h.end
	}
	return "", ""
}

func isHTMLOpen(line string) bool { open, _ := htmlOpen(line); return open != "" }

// htmlClosed: the HTML block opened by open ends on the line that holds
// its end marker (on the first line, after the opening marker).
func htmlClosed(open, end string) func(line string, first bool) bool {
	return func(line string, first bool) bool {
		if first {
			line = strings.TrimLeft(line, " ")[len(open):]
		}
		return strings.Contains(strings.ToLower(line), end)
	}
}

// mathBlockAt: a $$ display block starts at i: its first line starts with
// "$$" (up to three spaces in) and it closes, on that line or a later one.
func mathBlockAt(src string, i int) bool {
	line, next := lineAt(src, i)
	if indentOf(line) > 3 || !strings.HasPrefix(strings.TrimLeft(line, " "), "$$") {
		return false
	}
	if mathClosed(line, true) {
		return true
	}
	return strings.Contains(src[next:], "$$")
}

// mathClosed: a line that holds the closing "$$" of a display block (on
// its first line, one after the opening "$$").
func mathClosed(line string, first bool) bool {
	if first {
		return strings.Contains(strings.TrimLeft(line, " ")[2:], "$$")
	}
	return strings.Contains(line, "$$")
}

// verbatimBlock is the block that starts at i and runs through the first
// line closed reports (its first line included), or to the end of the
// text; and where the text after it starts.
func verbatimBlock(src string, i int, closed func(line string, first bool) bool) (block, int) {
	b := block{kind: blockVerbatim, start: i, head: i, closeAt: -1}
	for j, first := i, true; j < len(src); first = false {
		line, after := lineAt(src, j)
		if closed(line, first) {
			b.end = trimEnd(src, i, j+len(line))
			return b, after
		}
		j = after
	}
	b.end = trimEnd(src, i, len(src))
	return b, len(src)
}

// tableStarts: the line at i holds a '|' and the next line is a table's
// delimiter row.
func tableStarts(src string, i int) bool {
	line, next := lineAt(src, i)
	if !strings.Contains(line, "|") || next >= len(src) {
		return false
	}
	delim, _ := lineAt(src, next)
	return isDelimiterRow(delim)
}

// isDelimiterRow: cells of '-' with optional ':' at either end, between
// '|'s ("|:---|--:|").
func isDelimiterRow(line string) bool {
	s := strings.TrimSpace(line)
	if !strings.Contains(s, "|") || !strings.Contains(s, "-") {
		return false
	}
	for _, cell := range strings.Split(strings.Trim(s, "|"), "|") {
		c := strings.TrimSpace(cell)
		c = strings.TrimSuffix(strings.TrimPrefix(c, ":"), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

// tableBlock is the table whose header row starts at i: its header and
// delimiter rows, then every line holding a '|' up to a blank line.
func tableBlock(src string, i int) (block, int) {
	_, next := lineAt(src, i)
	delim, after := lineAt(src, next)
	b := block{kind: blockTable, start: i, head: next + len(delim), end: trimEnd(src, i, next+len(delim))}
	for j := after; j < len(src); {
		line, n := lineAt(src, j)
		if strings.TrimSpace(line) == "" || !strings.Contains(line, "|") {
			return b, j
		}
		b.end, j = trimEnd(src, j, j+len(line)), n
	}
	return b, len(src)
}

// paragraphBlock is the run of lines from i up to a blank line or a line
// that starts another block; a setext underline under it makes it a
// heading, unless it opens a list item or a block quote.
func paragraphBlock(src string, i int) (block, int) {
	line, j := lineAt(src, i)
	b := block{kind: blockParagraph, start: i, end: trimEnd(src, i, i+len(line))}
	setext := indentOf(line) <= 3 && !startsContainer(line)
	for j < len(src) {
		line, next := lineAt(src, j)
		if level := setextLevel(line); level > 0 && setext {
			title := strings.Join(strings.Fields(src[b.start:b.end]), " ")
			return block{kind: blockHeading, start: i, end: trimEnd(src, j, j+len(line)), level: level, title: title}, next
		}
		if strings.TrimSpace(line) == "" || fenceOpen(line) != "" || isHeading(line) || tableStarts(src, j) ||
			isHTMLOpen(line) || mathBlockAt(src, j) {
			return b, j
		}
		setext = setext && !startsContainer(line)
		b.end, j = trimEnd(src, j, j+len(line)), next
	}
	return b, len(src)
}
