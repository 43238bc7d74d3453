package source

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/job"
)

// docSpec is a documents input cutting passages of at most limit
// characters, with no minimum.
func docSpec(limit int) Spec {
	return Spec{Input: job.Input{MaxLineBytes: 1 << 24}, docs: documentInput{on: true, cut: CutOptions{limit: limit}, analysisChars: 12000}}
}

// docUnits reads one document file's bytes as the file name would be read.
func docUnits(t *testing.T, name, text string, limit int) []Problem {
	t.Helper()
	units, msg := docFileUnits([]byte(text), name, docSpec(limit))
	if msg != "" {
		t.Fatalf("%s: %s", name, msg)
	}
	return units
}

// TestDocumentTitles: a document's title is its front matter's (YAML or
// TOML), else its first top-level heading, where a heading is a heading:
// not a line of a fenced code block or an HTML comment, setext headings
// included; a document whose headings start at "##" has its first one as
// title (issue 43, item 2: "extern crate trpl; // required for mdbook
// test" was a book chapter's title).
func TestDocumentTitles(t *testing.T) {
	for _, tc := range []struct{ name, file, text, title string }{
		{"starts at ## with a hidden code line", "ch17.md",
			"## Futures and the Async Syntax\n\nThe key elements.\n\n```rust\n# extern crate trpl; // required for mdbook test\nuse trpl::Html;\n```\n",
			"Futures and the Async Syntax"},
		{"a heading in a tilde fence", "a.md", "Intro text.\n\n~~~sh\n# install it\nmake\n~~~\n\n# Install\n\nText.", "Install"},
		{"a heading in an HTML comment", "a.md", "<!--\n# Old title\nkept for links\n-->\n\n# Real title\n\nText.", "Real title"},
		{"a one-line HTML comment", "a.md", "<!-- # not this -->\n\n## Setup\n\nText.", "Setup"},
		{"a heading in a pre block", "a.md", "<pre>\n# shell prompt\n</pre>\n\n# Shells\n\nText.", "Shells"},
		{"the first level-1 heading over an earlier level-2", "a.md", "## Preface\n\nText.\n\n# Book\n\nText.", "Book"},
		{"front matter holding only a comment", "a.md", "---\n# draft: not yet\n---\n\n# Real\n\nText.", "Real"},
		{"a setext level-1 heading", "a.md", "Heat pipes\n==========\n\nText about heat.", "Heat pipes"},
		{"a setext level-2 heading", "a.md", "Intro text.\n\nWick design\n-----------\n\nText.", "Wick design"},
		{"TOML front matter", "a.md", "+++\ntitle = \"Hugo pages\"\ndate = 2024-01-02\n+++\n\n# Not the title\n\nText.", "Hugo pages"},
		{"TOML front matter without a title", "a.md", "+++\nweight = 3\n+++\n\n# Heading title\n\nText.", "Heading title"},
		{"YAML front matter's title first", "a.md", "---\ntitle: From YAML\n---\n\n# Heading\n\nText.", "From YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units := docUnits(t, tc.file, tc.text, 1000)
			if got := units[0].Title; got != tc.title {
				t.Errorf("title %q, want %q", got, tc.title)
			}
			for _, u := range units {
				if strings.Contains(u.Text, "+++") || strings.Contains(u.Text, "draft: not yet") {
					t.Errorf("front matter in a passage: %q", u.Text)
				}
			}
		})
	}
}

// TestReadDocumentFrontMatter: YAML front matter holding only comments,
// and TOML front matter (between "+++" lines), are metadata, not text.
func TestReadDocumentFrontMatter(t *testing.T) {
	for _, tc := range []struct{ name, raw, body, title string }{
		{"YAML with only a comment", "---\n# just a note\n---\nBody.", "Body.", ""},
		{"empty YAML", "---\n---\nBody.", "Body.", ""},
		{"TOML with a title", "+++\ntitle = 'T'\n[params]\nx = 1\n+++\nBody.", "Body.", "T"},
		{"TOML, CRLF", "+++\r\ntitle = \"T2\"\r\n+++\r\nBody.", "Body.", "T2"},
		{"not TOML: text between +++ lines", "+++\nnot = toml = at all\n+++\nBody.", "+++\nnot = toml = at all\n+++\nBody.", ""},
		{"a YAML scalar is no front matter", "---\nJust a line\n---\nText.", "---\nJust a line\n---\nText.", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := readDocument(tc.raw)
			if d.body != tc.body || d.title != tc.title {
				t.Errorf("readDocument(%q) = body %q, title %q; want %q, %q", tc.raw, d.body, d.title, tc.body, tc.title)
			}
		})
	}
}

// headingDoc has a heading in an HTML comment and in a pre block, setext
// headings and an ATX one.
const headingDoc = `Heat transfer
=============

Heat moves by conduction, convection and radiation; this page covers two of them.

<!-- Old headings. Do not remove or links may break.
# Old heading

## Another old one
-->

Conduction
----------

Conduction carries heat through a solid by the vibration of its lattice and its free electrons.

<pre>
# prompt: not a heading
</pre>

## Radiation

Radiation carries heat as electromagnetic waves and needs no medium between the bodies.
`

// TestHeadingsOutsideCommentsAndCode: a "#" line inside an HTML comment or
// a pre block is no outline entry, no section of a passage and no cut
// point; setext headings are all three.
func TestHeadingsOutsideCommentsAndCode(t *testing.T) {
	units := docUnits(t, "heat.md", headingDoc, 120)
	if want := "- Heat transfer\n  - Conduction\n  - Radiation"; units[0].Doc.Outline != want {
		t.Errorf("outline %q, want %q", units[0].Doc.Outline, want)
	}
	comment := strings.Index(headingDoc, "<!--")
	commentEnd := strings.Index(headingDoc, "-->") + 3
	var sections []string
	for _, u := range units {
		sections = append(sections, u.Section)
		if strings.HasPrefix(u.Text, "# Old") || strings.HasPrefix(u.Text, "## Another") || strings.HasPrefix(u.Text, "# prompt") {
			t.Errorf("a passage starts at a line of a comment or pre block: %q", u.Text)
		}
		if strings.Contains(u.Text, "<!--") != strings.Contains(u.Text, "-->") {
			t.Errorf("a passage holds part of the comment: %q", u.Text)
		}
		if strings.Contains(u.Text, "# Old heading") && !strings.Contains(u.Text, headingDoc[comment:commentEnd]) {
			t.Errorf("the comment is cut: %q", u.Text)
		}
	}
	for _, s := range sections {
		if strings.Contains(s, "Old") || strings.Contains(s, "prompt") {
			t.Errorf("section paths %q name a heading inside a comment or pre block", sections)
		}
	}
	var conduction bool
	for _, u := range units {
		if strings.HasPrefix(u.Text, "Conduction\n----------") {
			conduction = true
			if u.Section != "Heat transfer > Conduction" {
				t.Errorf("the setext section's path is %q", u.Section)
			}
		}
	}
	if !conduction {
		t.Errorf("no passage starts at the setext heading Conduction: %q", texts(units))
	}
}

// TestNoCutInsideMathOrComment: a $$ display block and an HTML comment that
// fit in a passage are never cut, blank lines inside them or not.
func TestNoCutInsideMathOrComment(t *testing.T) {
	para := "Energy is conserved."
	math := "$$\n\\begin{aligned}\nQ &= m c \\Delta T\n\n\\\\ W &= Q_h - Q_c\n\\end{aligned}\n$$"
	comment := "<!--\nA note for editors.\n\nIt has two paragraphs.\n-->"
	for _, block := range []string{math, comment} {
		text := para + "\n\n" + block + "\n\n" + para
		limit := len(block) + 15 // the block fits, not with a paragraph: cutting inside it would save a passage
		for _, c := range cutPassages(text, CutOptions{limit: limit}) {
			at := strings.Index(text, block)
			if c.Start > at && c.Start < at+len(block) || c.End > at && c.End < at+len(block) {
				t.Errorf("a passage boundary falls inside %q: %q", block, c.text(text))
			}
		}
	}
}

func texts(units []Problem) []string {
	out := make([]string, len(units))
	for i, u := range units {
		out[i] = u.Text
	}
	return out
}

// FuzzReadDocument: any text's front matter is split off whole (the body
// is the end of the normalized text) without a panic, and a text that
// does not start with a front matter line keeps its body whole.
func FuzzReadDocument(f *testing.F) {
	f.Add("---\ntitle: X\n---\nBody.")
	f.Add("+++\ntitle = \"T\"\n+++\nBody.")
	f.Add("---\n# only a comment\n...\nBody.")
	f.Add("+++\n[[a]]\nb = [1, 2\n+++\n")
	f.Fuzz(func(t *testing.T, raw string) {
		d := readDocument(raw)
		norm := strings.ReplaceAll(strings.ReplaceAll(strings.TrimPrefix(raw, "\uFEFF"), "\r\n", "\n"), "\r", "\n")
		if !strings.HasSuffix(norm, d.body) {
			t.Fatalf("body %q is not the end of the text %q", d.body, norm)
		}
		if !strings.HasPrefix(norm, "---\n") && !strings.HasPrefix(norm, "+++\n") && (d.body != norm || d.title != "") {
			t.Fatalf("a text without front matter read as body %q, title %q", d.body, d.title)
		}
	})
}

// FuzzScanBlocks: blocks come in order, do not overlap, start at a line
// start and hold text; headings have a level from 1.
func FuzzScanBlocks(f *testing.F) {
	f.Add(headingDoc)
	f.Add("a\n===\n<!--\n# x\n\n$$\n-->\n$$\ny\n\n$$\n<pre>\n```\n</pre>\n")
	f.Add("- item\n---\n> q\n===\n   <script>x</script>\n")
	f.Add(rstDoc)
	f.Add("===\nT\n===\n\n.. note::\n\n   x\n\n  y\nz\n---\n")
	f.Fuzz(func(t *testing.T, src string) {
		prev := 0
		for _, b := range append(scanBlocks(src, syntaxMarkdown), scanBlocks(src, syntaxRST)...) {
			if b.start < prev {
				prev = 0 // the second syntax's blocks
			}
			if b.start < prev || b.end <= b.start || b.end > len(src) || (b.start > 0 && src[b.start-1] != '\n') {
				t.Fatalf("block [%d, %d) after %d in %q", b.start, b.end, prev, src)
			}
			if b.kind == blockHeading && b.level < 1 {
				t.Fatalf("heading of level %d: %q", b.level, src[b.start:b.end])
			}
			prev = b.end
		}
	})
}
