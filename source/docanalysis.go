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
// heading path. d is the document as it was cut.
func withDocContext(units []Problem, d *cutDocument, analysisChars int) []Problem {
	if len(units) == 0 {
		return units
	}
	text := withoutBlobs(d.text, d.cuts)
	head := headOf(text, analysisChars)
	cut := len(head) < len(strings.TrimSpace(text))
	if len(units) == 1 && !cut && text == d.text {
		// A document of one passage is read as its passage: one string,
		// and the document's text is not kept alive by its head.
		head = units[0].Text
	}
	doc := &docContext{prompts.DocumentView{
		Title: d.title, Head: head, Cut: cut,
		Chars: utf8.RuneCountInString(text), Outline: outlineOf(d.blocks),
	}}
	paths := sectionPaths(d.blocks, d.cuts)
	for i := range units {
		units[i].Doc = doc
		units[i].PassageCount = int32(len(units))
		units[i].Section = paths[i]
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

// headings calls yield with the level and text of every heading among
// blocks (the cutter's, so no line of a fenced block, an HTML comment or
// a pre block), in order.
func headings(blocks []block, yield func(level int, title string)) {
	for _, b := range blocks {
		if b.kind == blockHeading && b.title != "" {
			yield(b.level, clip(b.title, maxHeadingBytes))
		}
	}
}

// headingTitle is a document's title by its headings: its first level-1
// heading, else the first of its top level (a chapter whose headings
// start at "##").
func headingTitle(blocks []block) string {
	title, top := "", 0
	headings(blocks, func(level int, t string) {
		if top == 0 || level < top {
			title, top = t, level
		}
	})
	return title
}

// outlineOf is the document's headings, one a line, indented by level,
// within maxOutlineBytes (the rest left out at a line end).
func outlineOf(blocks []block) string {
	var b strings.Builder
	full := false
	headings(blocks, func(level int, title string) {
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

// sectionPaths is each passage's heading path: the headings in force at
// its first text that is no heading (headings that open the passage
// count), or at its end when it is headings alone.
func sectionPaths(blocks []block, cuts []passageCut) []string {
	var st headingStack
	out := make([]string, len(cuts))
	k := 0
	for i, c := range cuts {
		for ; k < len(blocks) && blocks[k].start < c.Start; k++ {
			st.take(blocks[k])
		}
		path, set := "", false
		if k > 0 && blocks[k-1].end > c.Start { // the passage starts inside a block
			path, set = st.String(), true
		}
		for ; k < len(blocks) && blocks[k].start < c.End; k++ {
			if blocks[k].kind != blockHeading && !set {
				path, set = st.String(), true
			}
			st.take(blocks[k])
		}
		if !set {
			path = st.String()
		}
		out[i] = path
	}
	return out
}

// headingStack is the chain of headings in force while a document's blocks
// are read in order.
type headingStack []string

// take reads one block: a heading with a title enters the chain.
func (s *headingStack) take(b block) {
	if b.kind == blockHeading && b.title != "" {
		s.push(b.level, clip(b.title, maxHeadingBytes))
	}
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
