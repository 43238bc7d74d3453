package source

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// rstDoc is reStructuredText as Sphinx projects write it: an over- and
// underlined title, sections underlined with '=' and '~' (a '~' line is
// no code fence here), a code-block directive and a literal block.
const rstDoc = `==========
Flask Tips
==========

Flask is a small framework; this page collects a few habits that keep applications tidy.

Configuration
=============

Keep settings in one module and load them when the application starts.

.. code-block:: python

    app = Flask(__name__)

    app.config.from_object("settings")

Blueprints
~~~~~~~~~~

A blueprint groups views that belong together::

    bp = Blueprint("shop", __name__)

    @bp.route("/")
    def index():
        return "shop"

Testing
=======

Use the test client to call views without a server.
`

// TestRSTDocuments: a .rst file is read by reStructuredText's rules: its
// section titles are its title, outline, section paths and preferred cut
// points; a directive's or literal block's indented body is not cut when
// it fits, and keeps its indentation.
func TestRSTDocuments(t *testing.T) {
	units := docUnits(t, "tips.rst", rstDoc, 160)
	if units[0].Title != "Flask Tips" {
		t.Errorf("title %q", units[0].Title)
	}
	if want := "- Flask Tips\n  - Configuration\n    - Blueprints\n  - Testing"; units[0].Doc.Outline != want {
		t.Errorf("outline %q, want %q", units[0].Doc.Outline, want)
	}
	sections := map[string]string{}
	for _, u := range units {
		first, _, _ := strings.Cut(u.Text, "\n")
		sections[first] = u.Section
		if strings.Contains(u.Text, "app = Flask") != strings.Contains(u.Text, `app.config.from_object("settings")`) {
			t.Errorf("the code-block directive is cut: %q", u.Text)
		}
		if strings.Contains(u.Text, "bp = Blueprint") != strings.Contains(u.Text, `return "shop"`) {
			t.Errorf("the literal block is cut: %q", u.Text)
		}
	}
	for first, want := range map[string]string{"Configuration": "Flask Tips > Configuration", "Blueprints": "Flask Tips > Configuration > Blueprints", "Testing": "Flask Tips > Testing"} {
		if got, ok := sections[first]; !ok || got != want {
			t.Errorf("passage starting at %q: section %q (found %v), want %q; passages %q", first, got, ok, want, texts(units))
		}
	}
	checkCutsIn(t, rstDoc, syntaxRST, CutOptions{limit: 160}, cutBlocks(rstDoc, scanBlocks(rstDoc, syntaxRST), CutOptions{limit: 160}))
}

// TestDocumentFileKinds: a documents directory reads .md, .markdown and
// .mdx files as Markdown, .rst as reStructuredText, .txt and .text as
// text; other files are counted by extension as skipped, hidden ones not
// (issue 43, item 5: .markdown, .mdx, .rst and .text files were ignored
// without a word).
func TestDocumentFileKinds(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.md":          "# Alpha\n\nText of alpha.",
		"b.markdown":    "# Beta\n\nText of beta.",
		"c.mdx":         "---\ntitle: Gamma\n---\nimport Tabs from '@theme/Tabs';\n\nText of gamma.",
		"d.rst":         "Delta\n=====\n\nText of delta.",
		"e.text":        "Text of epsilon.",
		"f.txt":         "Text of zeta.",
		"img/g.png":     "\x89PNG",
		"img/h.png":     "\x89PNG",
		"page.html":     "<p>x</p>",
		"Makefile":      "all:",
		".hidden/x.bin": "x",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := docSpec(1000)
	in.Paths = []string{dir}
	titles := map[string]string{}
	err := ReadUnits(context.Background(), in, func(p Problem) error { titles[p.DocID] = p.Title; return nil }, func(e *InputError) { t.Errorf("bad: %v", e) })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.md": "Alpha", "b.markdown": "Beta", "c.mdx": "Gamma", "d.rst": "Delta", "e.text": "", "f.txt": ""}
	if !maps.Equal(titles, want) {
		t.Errorf("documents and titles %v, want %v", titles, want)
	}
	skipped, err := in.SkippedFiles()
	if err != nil {
		t.Fatal(err)
	}
	if skipped.Files != 4 || skipped.String() != "4 files that are not documents (2 .png, 1 .html, 1 with no extension)" {
		t.Errorf("skipped %+v: %q", skipped, skipped.String())
	}
	if !slices.Equal(skipped.Examples, []string{filepath.Join(dir, "Makefile"), filepath.Join(dir, "img/g.png"), filepath.Join(dir, "img/h.png")}) {
		t.Errorf("examples %q", skipped.Examples)
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "x.pdf"), []byte("%PDF"), 0o644)
	in.Paths = []string{empty}
	if err := CheckInputs(in); err == nil || !strings.Contains(err.Error(), ".md, .markdown, .mdx, .rst, .txt or .text files (it holds 1 .pdf)") {
		t.Errorf("a folder of no documents: %v", err)
	}
}

// FuzzCutRST: passages of any text read as reStructuredText keep the
// cutter's promises (checkCuts).
func FuzzCutRST(f *testing.F) {
	f.Add(rstDoc, 120, 20)
	f.Add("T\n~~~\n\n.. code::\n\n    a\n\n    b\n\n::\n\n  c", 10, 2)
	f.Fuzz(func(t *testing.T, text string, limit, least int) {
		if !utf8.ValidString(text) {
			return
		}
		o := CutOptions{limit: 1 + abs(limit)%400, min: abs(least) % 200}
		checkCutsIn(t, text, syntaxRST, o, cutBlocks(text, scanBlocks(text, syntaxRST), o))
	})
}

// TestOversizedOnlyDocumentIsRefused: an input whose only document is over
// input.max_line_bytes is refused before the run, saying so, as an input
// whose every row is bad is (issue 43, item 3: the run went on and
// finished with an empty corpus and exit code 0).
func TestOversizedOnlyDocumentIsRefused(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "big.md")
	if err := os.WriteFile(doc, []byte("# Big\n\n"+strings.Repeat("A long line of text. ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, doc} {
		in := docSpec(1000)
		in.Paths, in.MaxLineBytes, in.Format = []string{path}, 1000, "auto"
		err := CheckInputs(in)
		if err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes (input.max_line_bytes)") {
			t.Errorf("%s: %v", path, err)
		}
	}
}
