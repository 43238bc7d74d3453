package source

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func cutTexts(src string, o CutOptions) []string {
	var out []string
	for _, c := range cutPassages(src, o) {
		out = append(out, c.text(src))
	}
	return out
}

func TestCutPassages(t *testing.T) {
	long := strings.Repeat("word ", 30) // 150 characters
	fence := "```py\n" + strings.Repeat("x = 1\n", 8) + "```"
	table := "| a | b |\n|---|---|\n" + strings.Repeat("| 1 | 2 |\n", 6)
	para := func(n int) string { return strings.Repeat("y", n-1) + "." }
	for _, tc := range []struct {
		name string
		text string
		o    CutOptions
		want []string
	}{
		{"blank", " \n\n\t\n", CutOptions{limit: 100}, nil},
		{"one short paragraph keeps its indentation", "  Alpha beta.  \n", CutOptions{limit: 100}, []string{"  Alpha beta."}},
		{"paragraphs packed while they fit", "One two.\n\nThree four.\n\n\nFive six.", CutOptions{limit: 24},
			[]string{"One two.\n\nThree four.", "Five six."}},
		{"exactly at the limit", "abcd\n\nefgh", CutOptions{limit: 10}, []string{"abcd\n\nefgh"}},
		{"one over the limit", "abcd\n\nefghi", CutOptions{limit: 10}, []string{"abcd", "efghi"}},
		{"blank lines inside a code block are kept, and the indentation after them", "Code:\n\n    a = 1\n\n    b = 2\n", CutOptions{limit: 100},
			[]string{"Code:\n\n    a = 1\n\n    b = 2"}},
		{"a long paragraph at sentence ends", "First sentence here. Second one is here! Third? Last bit.", CutOptions{limit: 30},
			[]string{"First sentence here.", "Second one is here! Third?", "Last bit."}},
		{"no cut after an initial or e.g.", "See J. Smith for e.g. this case. Then more text follows here.", CutOptions{limit: 40},
			[]string{"See J. Smith for e.g. this case.", "Then more text follows here."}},
		{"closing quote after the full stop", `He said "stop." Then he left the room quietly.`, CutOptions{limit: 20},
			[]string{`He said "stop."`, "Then he left the", "room quietly."}},
		{"a long sentence at white space", strings.TrimSpace(long), CutOptions{limit: 40}, []string{
			"word word word word word word word word", "word word word word word word word word",
			"word word word word word word word word", "word word word word word word"}},
		{"one word over the limit stays whole", "tiny " + strings.Repeat("x", 50) + " end", CutOptions{limit: 10},
			[]string{"tiny", strings.Repeat("x", 50), "end"}},
		{"limit counts characters, not bytes", "äöü äöü äöü", CutOptions{limit: 7}, []string{"äöü äöü", "äöü"}},
		{"a cut before a heading rather than inside a section", "# A\n\n" + para(40) + "\n\n# B\n\n" + para(30) + "\n\n" + para(30), CutOptions{limit: 80},
			[]string{"# A\n\n" + para(40), "# B\n\n" + para(30) + "\n\n" + para(30)}},
		{"a heading stays with the paragraph under it", para(50) + "\n\n## H\n\n" + para(60), CutOptions{limit: 70},
			[]string{para(50), "## H\n\n" + para(60)}},
		{"a heading at the end joins the text above", para(20) + "\n\n# Trailing", CutOptions{limit: 70}, []string{para(20) + "\n\n# Trailing"}},
		{"a short tail is balanced against its neighbour", para(100) + "\n\n" + para(95) + "\n\n" + para(10), CutOptions{limit: 200, min: 60},
			[]string{para(100), para(95) + "\n\n" + para(10)}},
		{"a short passage stays when nothing can take it", para(195) + "\n\n" + para(10), CutOptions{limit: 200, min: 60},
			[]string{para(195), para(10)}},
		{"a fenced block that fits is not cut", "Intro.\n\n" + fence + "\n\nAfter.", CutOptions{limit: 70},
			[]string{"Intro.\n\n" + fence, "After."}},
		{"a fenced block over the limit is cut at lines and reopened", fence, CutOptions{limit: 40}, []string{
			"```py\nx = 1\nx = 1\nx = 1\nx = 1\nx = 1\n```", "```py\nx = 1\nx = 1\nx = 1\n```"}},
		{"a table over the limit repeats its header and delimiter rows", table, CutOptions{limit: 60}, []string{
			"| a | b |\n|---|---|\n| 1 | 2 |\n| 1 | 2 |\n| 1 | 2 |\n| 1 | 2 |",
			"| a | b |\n|---|---|\n| 1 | 2 |\n| 1 | 2 |"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cutTexts(tc.text, tc.o)
			if !slices.Equal(got, tc.want) {
				t.Errorf("cutPassages(%q, %+v)\n got %q\nwant %q", tc.text, tc.o, got, tc.want)
			}
			checkCuts(t, tc.text, tc.o, cutPassages(tc.text, tc.o))
		})
	}
}

// checkCuts asserts what a user of the passages relies on, whatever the
// text: the passages, less the lines they declare repeated (Prefix,
// Suffix), are stretches of the text in order, and only white space lies
// before, between and after them, so concatenating them gives the text
// back; a repeated prefix is a fence's opening line or a table's header and
// delimiter rows that came before, a suffix a closing fence; no passage
// begins or ends with white space other than its first line's indentation;
// none is over the limit but for one word (after its headings); no cut falls inside a fenced
// block or a table that fits in a passage; no passage is headings alone
// unless nothing but headings follows it.
func checkCuts(t *testing.T, src string, o CutOptions, cuts []passageCut) {
	t.Helper()
	checkCutsIn(t, src, syntaxMarkdown, o, cuts)
}

// checkCutsIn is checkCuts for a text read by the rules of sx.
func checkCutsIn(t *testing.T, src string, sx syntax, o CutOptions, cuts []passageCut) {
	t.Helper()
	var b strings.Builder
	blocks := scanBlocks(src, sx)
	prev := 0
	for i, c := range cuts {
		if c.Start < prev || c.End <= c.Start || c.End > len(src) {
			t.Fatalf("passage %d spans [%d, %d) after %d in a text of %d bytes", i, c.Start, c.End, prev, len(src))
		}
		if gap := src[prev:c.Start]; strings.TrimSpace(gap) != "" {
			t.Fatalf("the text between passages %d and %d is not white space: %q", i-1, i, gap)
		}
		b.WriteString(src[prev:c.Start])
		b.WriteString(src[c.Start:c.End])
		prev = c.End
		core := src[c.Start:c.End]
		if core[0] == '\n' || strings.HasPrefix(strings.TrimLeft(core, " \t"), "\n") || strings.TrimRightFunc(core, unicode.IsSpace) != core {
			t.Fatalf("passage %d starts with a blank line or ends with white space: %q", i, core)
		}
		if c.Prefix != "" && !declaredHead(src, blocks, c.Start, c.Prefix) {
			t.Fatalf("passage %d repeats %q, not a fence's opening line or a table's header that came before", i, c.Prefix)
		}
		if c.Suffix != "" && (!strings.HasPrefix(c.Suffix, "\n") || fenceOpen(c.Suffix[1:]) == "" || strings.TrimLeft(c.Suffix[1:], " \t`~") != "") {
			t.Fatalf("passage %d adds %q, not a closing fence", i, c.Suffix)
		}
		text := c.text(src)
		if c.Blob && len(blobRuns(src, c.Start, c.End)) == 0 {
			t.Fatalf("passage %d is marked a blob and holds none: %q", i, core)
		}
		if c.Blob {
			continue // a blob passage is left out, whatever its length
		}
		if len(blobRuns(src, c.Start, c.End)) > 0 {
			t.Fatalf("passage %d holds a blob with its text: %q", i, core)
		}
		if utf8.RuneCountInString(text) > o.limit {
			last := strings.LastIndexFunc(strings.TrimRightFunc(core, unicode.IsSpace), unicode.IsSpace) + 1
			// its first line's indentation, or headings, and one word
			if utf8.RuneCountInString(c.Prefix+strings.TrimLeft(core[:last], " \t")) > o.limit && !headingsOnly(core[:last], sx) && !headingsOnly(core, sx) {
				t.Fatalf("passage %d: %d characters over the limit %d, and not for one word: %q", i, utf8.RuneCountInString(text), o.limit, text)
			}
		}
	}
	checkNoCutInFittingBlock(t, src, o, blocks, cuts)
	for i, c := range cuts {
		if headingBlocksOnly(blocks, c.Start, c.End) && !headingBlocksOnly(blocks, c.Start, len(src)) {
			t.Fatalf("passage %d is headings alone: %q", i, src[c.Start:c.End])
		}
	}
	b.WriteString(src[prev:])
	if b.String() != src || strings.TrimSpace(src[prev:]) != "" {
		t.Fatalf("the passages do not give the text back:\n text %q\n got  %q", src, b.String())
	}
	if strings.TrimSpace(src) != "" && len(cuts) == 0 {
		t.Fatalf("no passage from a text that is not blank: %q", src)
	}
}

// declaredHead: head is the opening line of the fenced block, or the
// header and delimiter rows of the table, that the passage starting at s
// starts inside, with their line end.
func declaredHead(src string, blocks []block, s int, head string) bool {
	k := sort.Search(len(blocks), func(k int) bool { return blocks[k].end > s }) // the block s is in
	if k == len(blocks) || blocks[k].start >= s {
		return false
	}
	b := blocks[k]
	return (b.kind == blockFence || b.kind == blockTable) && head == src[b.start:b.head]+"\n"
}

// headingBlocksOnly: every block that overlaps [start, end) is a heading.
func headingBlocksOnly(blocks []block, start, end int) bool {
	k := sort.Search(len(blocks), func(k int) bool { return max(blocks[k].end, blocks[k].start+1) > start })
	for ; k < len(blocks) && blocks[k].start < end; k++ {
		if blocks[k].kind != blockHeading {
			return false
		}
	}
	return true
}

// checkNoCutInFittingBlock: no cut falls inside a fenced block, a table or
// a verbatim block (an HTML comment, $$ math) that fits in a passage with the headings above it.
func checkNoCutInFittingBlock(t *testing.T, src string, o CutOptions, blocks []block, cuts []passageCut) {
	t.Helper()
	headAt := -1
	for _, bl := range blocks {
		if bl.kind == blockHeading {
			if headAt < 0 {
				headAt = bl.start
			}
			continue
		}
		from := bl.start
		if headAt >= 0 {
			from, headAt = headAt, -1
		}
		if !keepsWhole(bl.kind) || longerThan(src[from:bl.end], o.limit) {
			continue
		}
		// the first passage that ends after the block starts
		k := sort.Search(len(cuts), func(k int) bool { return cuts[k].End > bl.start })
		if k+1 < len(cuts) && cuts[k].End < bl.end && cuts[k+1].Start > bl.start && !cuts[k].Blob && !cuts[k+1].Blob {
			t.Fatalf("a cut after passage %d falls inside a block that fits in a passage with its headings: %q", k, src[from:bl.end])
		}
	}
}

func headingsOnly(s string, sx syntax) bool {
	for _, b := range scanBlocks(s, sx) {
		if b.kind != blockHeading {
			return false
		}
	}
	return true
}

func FuzzCutPassages(f *testing.F) {
	f.Add("A first paragraph. With two sentences!\n\nA second one, longer than the first, with more words in it.", 30, 10)
	f.Add(strings.Repeat("x", 300)+" y", 20, 5)
	f.Add("a\u00a0b\u2003c. D\u3000e", 3, 0)
	f.Add("# T\n\n```go\n\tfunc f() {\n\n\t\treturn\n\t}\n```\n\n| h | i |\n|:-|-:|\n| 1 | 2 |\n| 3 | 4 |\n\ntail.", 25, 8)
	f.Add("~~~~ info\n  ~~~\n  code\n~~~~~\n# only a heading", 12, 4)
	f.Add("text\n| a |\n|---|\n| b |\n    indented\n\n\n   ```\nunclosed\n\n", 9, 3)
	f.Add("See ![a b](data:image/png;base64,iVBORw0KGgo=) here.\n\n```\nAAAAbbbb1111"+strings.Repeat("Zz9+", 70)+"\n```", 40, 5)
	f.Add("<p><img  src=\"data:;base64,AAAA\" width=3>x</p> "+strings.Repeat("Qm9vayBvZiBiYXNlNjQgZGF0YQ== ", 12), 30, 0)
	f.Fuzz(func(t *testing.T, text string, limit, least int) {
		if !utf8.ValidString(text) {
			return // documents are checked for UTF-8 before they are cut
		}
		o := CutOptions{limit: 1 + abs(limit)%400, min: abs(least) % 200}
		checkCuts(t, text, o, cutPassages(text, o))
	})
}

// TestReadDocument: the normalization a passage makes of its document's
// text is the documented one and no other.
func TestReadDocument(t *testing.T) {
	for _, tc := range []struct {
		name, raw, body, title string
	}{
		{"CRLF and CR line ends", "line one\r\nline two\r\rnext", "line one\nline two\n\nnext", ""},
		{"a byte order mark", "\uFEFF# T\n", "# T\n", ""},
		{"front matter with a title", "---\ntitle: Deep nets\nlayout: page\n---\n\nBody.\n", "\nBody.\n", "Deep nets"},
		{"front matter ending in ...", "---\ntitle: 'Q: A'\n...\nBody.", "Body.", "Q: A"},
		{"front matter after a BOM, with CRLF", "\uFEFF---\r\ntitle: X\r\n---\r\nBody.", "Body.", "X"},
		{"a rule that is no front matter", "---\nJust a line, then a rule\n---\nText.", "---\nJust a line, then a rule\n---\nText.", ""},
		{"an unclosed front matter is text", "---\ntitle: X\nBody.", "---\ntitle: X\nBody.", ""},
		{"a --- not on the first line", "Text\n---\ntitle: X\n---\n", "Text\n---\ntitle: X\n---\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := readDocument(tc.raw)
			if d.body != tc.body || d.title != tc.title {
				t.Errorf("readDocument(%q) = body %q, title %q; want %q, %q", tc.raw, d.body, d.title, tc.body, tc.title)
			}
		})
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// BenchmarkCutPassages cuts a 1 MB paragraph without sentence ends into
// 400-character passages: linear in the text, not in the number of cuts.
func BenchmarkCutPassages(b *testing.B) {
	text := strings.Repeat("word ", 200_000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		cutPassages(text, CutOptions{limit: 400, min: 200})
	}
}
