package source

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/job"

	"github.com/cespare/xxhash/v2"
)

// CutterVersion names the rules by which documents are read and cut into
// passages. A grounded job's fingerprint holds it (versions.passage_cutter),
// because other rules give other passage texts under the same passage ids:
// a run made by an older cutter is not resumed into silently.
//
//	1  paragraphs trimmed and packed, cut at sentence ends (until issue 28)
//	2  the source text byte for byte, cut by Markdown structure, a minimum
//	   length, front matter and a byte order mark as metadata
//	3  no heading or cut inside an HTML comment, <pre> block or $$ display;
//	   setext headings; TOML and comment-only YAML front matter
const CutterVersion = "3"

// MinPassage is the minimum that counts: at most half the passage size,
// so a short tail can always be balanced against its neighbour.
func MinPassage(g job.GroundedStage) int { return min(max(g.MinPassageChars, 0), g.PassageChars/2) }

// CutOptionsOf are the passage sizes of the job's documents.
func CutOptionsOf(g job.GroundedStage) CutOptions {
	return CutOptions{limit: g.PassageChars, min: MinPassage(g)}
}

// CutOptions are a document's passage sizes in characters (runes): at most
// limit, and at least min where the cutter can (0: no minimum).
type CutOptions struct{ limit, min int }

// passageCut is one passage of a document's text src: Prefix +
// src[Start:End] + Suffix. Prefix and Suffix are the only text a passage
// adds to its document's: the header and delimiter rows of a table cut into
// pieces, the opening line of a fenced block cut into pieces (Prefix), and
// its closing fence (Suffix). Between two passages lies only white space.
type passageCut struct {
	Start, End     int
	Prefix, Suffix string
	Blob           bool // a data URI or base64 data, never packed with text (isolateBlobs)
}

func (c passageCut) text(src string) string { return c.Prefix + src[c.Start:c.End] + c.Suffix }

// Cut penalties of the passage packer: what a passage and a cut at each
// kind of boundary cost; a passage shorter than the minimum costs more than
// any number of cuts. A cut between two blocks of one section costs more
// than a passage, so a section that fits in a passage is cut only when
// that saves more than one passage; a cut inside a paragraph costs more
// than two passages and a cut between blocks, so it is made only for a
// paragraph longer than a passage or to spare a passage under the minimum.
const (
	costPassage      = 10
	costShort        = 1000
	costCutSection   = 0   // before a heading
	costCutBlock     = 12  // between two blocks (paragraphs, lists, tables, code) of a section
	costCutBlockLine = 20  // between two lines of a fenced block or table longer than a passage
	costCutSentence  = 60  // at a sentence end inside a paragraph
	costCutLine      = 70  // at a line end inside a paragraph
	costCutWord      = 100 // at white space inside a sentence longer than a passage
)

// cutPassages cuts a document's text into passages. Cuts fall, in order of
// preference, before a heading, between two blocks, between two lines of a
// block, at a sentence end, at white space; never inside a word, so a
// passage is longer than the limit only when it is one word that is. A
// heading stays with the block under it. A fenced code block or a table
// is cut inside only when it is longer than a passage: then between its
// lines, each piece reopening and closing the fence or repeating the
// table's header and delimiter rows. Among the ways to cut at those
// boundaries, the packer takes the one with the fewest passages shorter
// than the minimum, then the fewest passages and cuts inside sections.
// Passages are never empty and hold no leading or trailing blank line; a
// blank text has none.
func cutPassages(src string, o CutOptions) []passageCut {
	return cutBlocks(src, scanBlocks(src, syntaxMarkdown), o)
}

// cutBlocks is cutPassages over the text's blocks.
func cutBlocks(src string, blocks []block, o CutOptions) []passageCut {
	o.limit = max(o.limit, 1)
	o.min = min(max(o.min, 0), o.limit/2)
	var spans []span
	for _, a := range atomsOf(src, blocks) {
		spans = append(spans, spansOf(src, a, o)...)
	}
	return pack(src, spans, o)
}

// cutDocument is a document's text as it was cut: its title, its blocks
// and its passages.
type cutDocument struct {
	text, title string
	blocks      []block
	cuts        []passageCut
	limit       int // the passage limit it was cut by
}

// keepsWhole: a block cut inside only when it is longer than a passage.
func keepsWhole(k blockKind) bool { return k == blockFence || k == blockTable || k == blockVerbatim }

// atom is a block b with the headings above it and any headings at the
// end of the text after it: src[start:end]. section is set when headings
// come first.
type atom struct {
	b          block
	start, end int
	section    bool
}

// atomsOf glues every heading to the block under it; headings with no
// block under them join the block above, so a heading is never alone.
func atomsOf(src string, blocks []block) []atom {
	var out []atom
	headAt := -1 // start of the pending headings
	for _, b := range blocks {
		if b.kind == blockHeading {
			if headAt < 0 {
				headAt = b.start
			}
			continue
		}
		a := atom{b: b, start: b.start, end: b.end}
		if headAt >= 0 {
			a.start, a.section, headAt = headAt, true, -1
		}
		out = append(out, a)
	}
	if headAt >= 0 { // trailing headings
		end := trimEnd(src, headAt, len(src))
		if len(out) == 0 {
			b := block{kind: blockHeading, start: end, end: end}
			return []atom{{b: b, start: headAt, end: end, section: true}}
		}
		out[len(out)-1].end = end
	}
	return out
}

// span is what the packer puts into passages whole: a stretch
// src[start:end] of an atom between two boundaries where a cut may fall.
// cost is that of a cut before it; prefix and suffix are what a passage
// that starts or ends with it adds (repeatedHead, closingFence).
type span struct {
	start, end     int
	cost           int
	prefix, suffix string
	blob           bool
}

// spansOf cuts an atom at the boundaries where a passage may end inside it:
// a paragraph's sentence ends and line ends; a fenced block's or a table's
// line ends when the block with its headings is longer than a passage (never among the lines
// a piece repeats, nor just before a fence's closing line). A stretch still
// longer than a passage is cut at white space, after the word that crosses
// the limit; the headings above a block are never cut from it.
func spansOf(src string, a atom, o CutOptions) []span {
	first := costCutBlock
	if a.section {
		first = costCutSection
	}
	b := a.b
	if keepsWhole(b.kind) && !longerThan(src[a.start:b.end], o.limit) {
		return withRepeats(src, b, isolateBlobs(src, splitAtWords(src, span{start: a.start, end: a.end, cost: first}, b.end-1, o.limit))) // cut only from its end on, among the headings after it
	}
	lo, hi := b.start, b.end // boundaries fall in (lo, hi)
	if keepsWhole(b.kind) {
		if !longerThan(src[a.start:b.end], o.limit) { // the block fits, with its headings
			lo = hi
		}
		lo = max(lo, b.head)
		if b.kind == blockFence && b.closeAt > 0 {
			hi = trimEnd(src, b.start, b.closeAt)
		}
	}
	var out []span
	s, cost := a.start, first
	for i := lo + 1; i < hi; { // not at lo: a fence's opening line or a table's delimiter row ends there
		r, size := utf8.DecodeRuneInString(src[i:])
		if !unicode.IsSpace(r) || !isWordEnd(src, i) {
			i += size
			continue
		}
		next := skipGap(src, i)
		c := 0
		switch {
		case b.kind == blockParagraph && isSentenceEnd(src, i):
			c = costCutSentence
		case strings.Contains(src[i:next], "\n"):
			c = costCutLine
		}
		if c > 0 && next < a.end {
			out = append(out, span{start: s, end: trimEnd(src, s, i), cost: cost})
			s, cost = next, c
			if keepsWhole(b.kind) {
				cost = costCutBlockLine
			}
		}
		i = max(next, i+size)
	}
	out = append(out, span{start: s, end: a.end, cost: cost})
	var fine []span
	headRunes := utf8.RuneCountInString(repeatedHead(src, b, b.end-1)) + utf8.RuneCountInString(closingFence(b, b.head+1))
	if headRunes > o.limit/2 { // lines so long that repeating them leaves no room: cut as plain lines
		b.kind, headRunes = blockParagraph, 0
	}
	for _, sp := range out {
		fine = append(fine, splitAtWords(src, sp, max(sp.start, b.start), max(o.limit-headRunes, 1))...)
	}
	return withRepeats(src, b, isolateBlobs(src, fine))
}

// withRepeats gives each piece of block b what it repeats or adds: a
// table's header rows or a fence's opening line, its closing fence.
func withRepeats(src string, b block, pieces []span) []span {
	for k := range pieces {
		pieces[k].prefix = repeatedHead(src, b, pieces[k].start)
		if k < len(pieces)-1 {
			pieces[k].suffix = closingFence(b, pieces[k+1].start)
		}
	}
	return pieces
}

// splitAtWords cuts a span longer than budget characters at the last white
// space that keeps a piece within it (after lo), else after the word that
// crosses it.
func splitAtWords(src string, sp span, lo, budget int) []span {
	var out []span
	s := sp.start
	for longerThan(src[s:sp.end], budget) {
		maxB := byteAfterRunes(src, s, budget)
		from := max(s, lo)
		c := lastCut(src, from, maxB, isWordEnd)
		if c <= from {
			if maxB > from {
				from = maxB
			} else {
				_, size := utf8.DecodeRuneInString(src[from:])
				from += size
			}
			c = firstCut(src, from, sp.end)
		}
		if c < 0 || skipGap(src, c) >= sp.end {
			break // one word longer than the budget
		}
		piece := sp
		piece.start, piece.end = s, trimEnd(src, s, c)
		if s != sp.start {
			piece.cost = costCutWord
		}
		out = append(out, piece)
		s = skipGap(src, c)
	}
	last := sp
	last.start = s
	if s != sp.start {
		last.cost = costCutWord
	}
	return append(out, last)
}

// repeatedHead is what a piece of block b that starts at s repeats: the
// table's header and delimiter rows or the fence's opening line, when the
// piece starts inside the block after them.
func repeatedHead(src string, b block, s int) string {
	if (b.kind == blockFence || b.kind == blockTable) && s > b.head && s < b.end {
		return src[b.start:b.head] + "\n"
	}
	return ""
}

// closingFence is the fence line a piece of block b that ends before next
// adds, when the piece ends inside the block, before its own closing line.
func closingFence(b block, next int) string {
	if b.kind == blockFence && next > b.head && next < b.end {
		return "\n" + b.closer
	}
	return ""
}

// firstCut is the first byte offset i in [from, hi) where white space
// follows a word, or -1.
func firstCut(src string, from, hi int) int {
	for i := from; i < hi; {
		r, size := utf8.DecodeRuneInString(src[i:])
		if unicode.IsSpace(r) && isWordEnd(src, i) {
			return i
		}
		i += size
	}
	return -1
}

// skipGap is where the text after a cut at c resumes: past the white space
// at c, but at the start of the line when the white space ends a line, so
// that the next line keeps its indentation.
func skipGap(src string, c int) int {
	j := c
	lastNL := -1
	for j < len(src) {
		r, size := utf8.DecodeRuneInString(src[j:])
		if !unicode.IsSpace(r) {
			break
		}
		if r == '\n' {
			lastNL = j
		}
		j += size
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	return j
}

// byteAfterRunes is the byte offset n runes after s, or len(src).
func byteAfterRunes(src string, s, n int) int {
	for i := range src[s:] {
		if n == 0 {
			return s + i
		}
		n--
	}
	return len(src)
}

// longerThan reports whether s has more than n runes, looking at no more
// than n+1 of them.
func longerThan(s string, n int) bool {
	for i := range s {
		if n == 0 {
			return i < len(s)
		}
		n--
	}
	return false
}

// lastCut is the largest byte offset i in (lo, maxB] where src[i] is white
// space and at(src, i) holds; lo when there is none.
func lastCut(src string, lo, maxB int, at func(p string, i int) bool) int {
	for i := maxB; i > lo; {
		if i < len(src) {
			if r, _ := utf8.DecodeRuneInString(src[i:]); unicode.IsSpace(r) && at(src, i) {
				return i
			}
		}
		_, size := utf8.DecodeLastRuneInString(src[:i])
		i -= size
	}
	return lo
}

// isWordEnd: the rune before white space at i is not white space.
func isWordEnd(p string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(p[:i])
	return !unicode.IsSpace(r)
}

// isSentenceEnd: white space at i follows ".", "!" or "?", possibly behind
// closing quotes or brackets, and the word before is not a one-letter
// abbreviation ("e.g.", "J.").
func isSentenceEnd(p string, i int) bool {
	j := i
	for j > 0 {
		r, size := utf8.DecodeLastRuneInString(p[:j])
		if !strings.ContainsRune(`)]"'”’»`, r) {
			break
		}
		j -= size
	}
	r, size := utf8.DecodeLastRuneInString(p[:j])
	if r != '.' && r != '!' && r != '?' {
		return false
	}
	if r == '.' {
		before := p[:j-size]
		k := strings.LastIndexFunc(before, func(r rune) bool { return unicode.IsSpace(r) || r == '.' })
		if utf8.RuneCountInString(before[k+1:]) == 1 {
			return false
		}
	}
	return true
}

// pack puts consecutive spans into passages of at most the limit: of all
// the ways to do so, the cheapest by the costs above (a shortest path over
// the spans, looking back no further than a passage reaches). Blob spans
// go into passages of their own, every run of them into one, whatever its
// length.
func pack(src string, spans []span, o CutOptions) []passageCut {
	n := len(spans)
	if n == 0 {
		return nil
	}
	// runeStart[i], runeEnd[i]: the span's bounds in runes of src.
	runeStart, runeEnd := make([]int, n), make([]int, n)
	at, pos := 0, 0
	for i, sp := range spans {
		at += utf8.RuneCountInString(src[pos:sp.start])
		runeStart[i] = at
		at += utf8.RuneCountInString(src[sp.start:sp.end])
		runeEnd[i], pos = at, sp.end
	}
	headRunes, tailRunes := make([]int, n), make([]int, n)
	for i, sp := range spans {
		headRunes[i], tailRunes[i] = utf8.RuneCountInString(sp.prefix), utf8.RuneCountInString(sp.suffix)
	}
	const unreachable = math.MaxInt / 4
	best, from := make([]int, n+1), make([]int, n+1)
	blobStart := 0 // the first span of the run of blob spans that j is in
	for j := range n {
		cutAfter := 0
		if j < n-1 {
			cutAfter = spans[j+1].cost
		}
		best[j+1] = unreachable
		if spans[j].blob {
			if j == 0 || !spans[j-1].blob {
				blobStart = j
			}
			if j == n-1 || !spans[j+1].blob { // a run of blobs is one passage
				best[j+1], from[j+1] = best[blobStart]+costPassage+cutAfter, blobStart
			}
			continue
		}
		for i := j; i >= 0 && !spans[i].blob; i-- {
			if i < j && runeEnd[j]-runeStart[i] > o.limit {
				break
			}
			l := headRunes[i] + runeEnd[j] - runeStart[i] + tailRunes[j]
			if i < j && l > o.limit {
				continue
			}
			c := best[i] + costPassage + cutAfter
			if l < o.min {
				c += costShort
			}
			if c < best[j+1] {
				best[j+1], from[j+1] = c, i
			}
		}
	}
	var out []passageCut
	for j := n; j > 0; j = from[j] {
		i := from[j]
		out = append(out, passageCut{Start: spans[i].start, End: spans[j-1].end, Prefix: spans[i].prefix, Suffix: spans[j-1].suffix, Blob: spans[i].blob})
	}
	slices.Reverse(out)
	return out
}

// ContentHash is the content hash of a passage (the record's doc_hash): 16
// hex digits of xxhash64 over its trimmed text.
func ContentHash(text string) string {
	return fmt.Sprintf("%016x", xxhash.Sum64String(strings.TrimSpace(text)))
}

// PassagesIn is the number of passages a document's text is cut into under
// a job's grounded settings.
func PassagesIn(text string, g job.GroundedStage) int {
	return len(cutPassages(readDocument(text).body, CutOptionsOf(g)))
}
