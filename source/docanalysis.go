package source

import (
	"strings"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/prompts"
)

// The grounded style analyses each document once (seed 001's document
// analysis: genre, contribution, concepts, depth, reasoning mode of the
// document) and gives that analysis to every passage of it, with the
// passage's position. The analysis reads the document's beginning, up to
// grounded.analysis_chars characters cut at a paragraph or line break, and
// the outline of the whole document (its Markdown headings), so a long
// document costs one request of bounded size; a summary chain over the
// whole text was not chosen, as it would cost one request per part and
// serialize them. The analysis request depends on the document alone, so
// it is the same request for every passage: the response cache sends it
// once (and an identical request in flight waits for the first, see
// llm's single-flight), and in batch mode it is one row with every
// passage waiting on it.

// docContext is what a passage carries of its document: shared by all its
// passages, one allocation per document.
type docContext struct {
	prompts.DocumentView
}

// Bounds of the document outline the analysis is shown.
const (
	maxOutlineBytes = 3000
	maxHeadingBytes = 200
)

// withDocContext gives every passage of one document the document's
// context for the analysis, the number of passages and the passage's
// heading path. text is the document as it was cut.
func withDocContext(units []Problem, title, text string, analysisChars int) []Problem {
	if len(units) == 0 {
		return units
	}
	head := headOf(text, analysisChars)
	cut := len(head) < len(strings.TrimSpace(text))
	if len(units) == 1 && !cut {
		// A document of one passage is read as its passage: one string,
		// and the document's text is not kept alive by its head.
		head = units[0].Text
	}
	doc := &docContext{prompts.DocumentView{
		Title: title, Head: head, Cut: cut,
		Chars: utf8.RuneCountInString(text), Outline: outlineOf(text),
	}}
	var path headingStack
	for i := range units {
		units[i].Doc = doc
		units[i].PassageCount = int32(len(units))
		units[i].Section = path.advance(units[i].Text)
	}
	return units
}

// headOf is the beginning of text the analysis reads: at most n
// characters, cut at the last paragraph or line break in the last quarter
// (prompts.CutHead), and the whole text when it is shorter.
func headOf(text string, n int) string {
	text = strings.TrimSpace(text)
	end, count := len(text), 0
	for i := range text {
		if count == n {
			end = i
			break
		}
		count++
	}
	return prompts.CutHead(text, end)
}

// headings calls yield with the level and text of every ATX heading of
// text outside fenced code blocks, by the cutter's rules (scanMarkdown).
func headings(text string, yield func(level int, title string)) {
	scanMarkdown(text, func(_ string, level int, title string) {
		if level > 0 && title != "" {
			yield(level, clip(title, maxHeadingBytes))
		}
	})
}

// outlineOf is the document's headings, one a line, indented by level,
// within maxOutlineBytes (the rest left out at a line end).
func outlineOf(text string) string {
	var b strings.Builder
	full := false
	headings(text, func(level int, title string) {
		line := strings.Repeat("  ", level-1) + "- " + title + "\n"
		if full || b.Len()+len(line) > maxOutlineBytes {
			full = true
			return
		}
		b.WriteString(line)
	})
	out := strings.TrimRight(b.String(), "\n")
	if full {
		out += "\n(more headings left out)"
	}
	return out
}

// headingStack is the chain of headings in force while passages are read
// in order.
type headingStack []string

// advance reads one passage: it returns the heading path at the passage's
// first text (headings that open the passage count), and leaves the stack
// as it stands at the passage's end. A fence is tracked within the
// passage, as a passage cut inside a code block reopens it.
func (s *headingStack) advance(passage string) string {
	path := ""
	seen := false
	scanMarkdown(passage, func(line string, level int, title string) {
		if level > 0 && title != "" {
			s.push(level, clip(title, maxHeadingBytes))
			return
		}
		if !seen && strings.TrimSpace(line) != "" {
			seen = true
			path = s.String()
		}
	})
	if !seen {
		path = s.String()
	}
	return path
}

func (s *headingStack) push(level int, title string) {
	st := *s
	for len(st) >= level {
		st = st[:len(st)-1]
	}
	for len(st) < level-1 {
		st = append(st, "")
	}
	*s = append(st, title)
}

// String is the path, non-empty headings joined by " > ".
func (s headingStack) String() string {
	var parts []string
	for _, h := range s {
		if h != "" {
			parts = append(parts, h)
		}
	}
	return strings.Join(parts, " > ")
}

// clip cuts s to at most n bytes at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// DocumentView is p's document as its analysis reads it; a passage made
// without its document's context (a single passage) stands for its
// document.
func (p Problem) DocumentView() prompts.DocumentView {
	if p.Doc != nil {
		return p.Doc.DocumentView
	}
	return prompts.DocumentView{Title: p.Title, Head: p.Text, Chars: utf8.RuneCountInString(p.Text)}
}
