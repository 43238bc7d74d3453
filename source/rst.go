package source

import "strings"

// reStructuredText is read by its own block rules, not Markdown's (a line
// of '~' under a title is an underline, not a code fence):
//
//   - a section title is a line of text under an adornment line, or between
//     an overline and an underline of one character: a line of three or
//     more of one punctuation character; its level is the order in which
//     its adornment style (the character, with or without an overline)
//     first appears, as docutils reads it, so the first title is the
//     document's;
//   - a directive or comment (a line starting ".. ") and the indented lines
//     under it, blank lines between them included, are one block, as is an
//     indented block (a literal block after "::", a block quote); they are
//     kept whole when they fit in a passage, else cut at line ends, each
//     piece keeping its indentation;
//   - any other run of lines up to a blank line is a paragraph.

// scanRST splits reStructuredText into its blocks.
func scanRST(src string) []block {
	var out []block
	levels := map[string]int{} // adornment style -> level
	for i := 0; i < len(src); {
		line, next := lineAt(src, i)
		if strings.TrimSpace(line) == "" {
			i = next
			continue
		}
		if b, after, ok := rstTitle(src, i, levels); ok {
			out = append(out, b)
			i = after
			continue
		}
		if indentOf(line) > 0 || isDirective(line) {
			b, after := indentedBlock(src, i)
			out = append(out, b)
			i = after
			continue
		}
		b := block{kind: blockParagraph, start: i, end: trimEnd(src, i, i+len(line))}
		j := next
		for j < len(src) {
			l, n := lineAt(src, j)
			if strings.TrimSpace(l) == "" {
				break
			}
			b.end, j = trimEnd(src, j, j+len(l)), n
		}
		out = append(out, b)
		i = j
	}
	return out
}

// adornment is the character of an adornment line (three or more of one
// ASCII punctuation character, from the line's start, trailing white space
// allowed), or 0.
func adornment(line string) byte {
	s := strings.TrimRight(line, " \t")
	if len(s) < 3 || !isPunct(s[0]) || strings.Trim(s, s[:1]) != "" {
		return 0
	}
	return s[0]
}

func isPunct(c byte) bool { return c > ' ' && c < 0x7f && strings.IndexByte(punctuation, c) >= 0 }

const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// isDirective: a line that starts an explicit markup block (a directive,
// a comment, a target, a footnote).
func isDirective(line string) bool { return line == ".." || strings.HasPrefix(line, ".. ") }

// rstTitle reads the section title that starts at i, if one does: a text
// line under an adornment, or between an overline and an underline alike.
func rstTitle(src string, i int, levels map[string]int) (block, int, bool) {
	first, next := lineAt(src, i)
	if next >= len(src) {
		return block{}, 0, false
	}
	second, after := lineAt(src, next)
	style, title, end := "", "", 0
	if c := adornment(first); c != 0 {
		if after >= len(src) || strings.TrimSpace(second) == "" || adornment(second) != 0 {
			return block{}, 0, false
		}
		third, last := lineAt(src, after)
		if adornment(third) != c {
			return block{}, 0, false
		}
		style, title, end, after = "over"+string(c), strings.TrimSpace(second), after+len(third), last
	} else {
		c := adornment(second)
		if c == 0 || indentOf(first) > 0 || isDirective(first) {
			return block{}, 0, false
		}
		style, title, end = string(c), strings.TrimSpace(first), next+len(second)
	}
	level, ok := levels[style]
	if !ok {
		level = len(levels) + 1
		levels[style] = level
	}
	return block{kind: blockHeading, start: i, end: trimEnd(src, i, end), level: level, title: title}, after, true
}

// indentedBlock is the block that starts at i (an indented line, or a
// directive) and takes every following line that is blank or indented;
// and where the text after it starts.
func indentedBlock(src string, i int) (block, int) {
	line, j := lineAt(src, i)
	b := block{kind: blockVerbatim, start: i, head: i, closeAt: -1, end: trimEnd(src, i, i+len(line))}
	for j < len(src) {
		l, n := lineAt(src, j)
		if strings.TrimSpace(l) != "" {
			if indentOf(l) == 0 {
				break
			}
			b.end = trimEnd(src, j, j+len(l))
		}
		j = n
	}
	return b, j
}
