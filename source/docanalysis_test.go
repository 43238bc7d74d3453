package source

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rubricforge/rubricforge/prompts"
)

const sectionedDoc = `# Storage engines

Intro paragraph about storage engines and why they log before they write pages.

## Write-ahead logging

The log is appended and fsynced before the data pages change, so a crash never loses a committed change.

` + "```python\n# not a heading: a comment in code\nlog.append(change)\n```" + `

### Checkpoints

A checkpoint bounds the log that recovery must replay after a crash.

## Compaction

Compaction rewrites segments to drop overwritten keys and reclaim space on disk.
`

func TestWithDocContext(t *testing.T) {
	for _, tc := range []struct {
		name     string
		passages []string
		want     []string
	}{
		{"headings open passages", []string{
			"# Storage engines\n\nIntro paragraph about storage engines.",
			"## Write-ahead logging\n\nThe log is appended and fsynced first.",
			"```python\n# not a heading: a comment in code\nlog.append(change)\n```",
			"### Checkpoints\n\nA checkpoint bounds the log to replay.",
			"## Compaction\n\nCompaction rewrites segments.",
		}, []string{
			"Storage engines",
			"Storage engines > Write-ahead logging",
			"Storage engines > Write-ahead logging",
			"Storage engines > Write-ahead logging > Checkpoints",
			"Storage engines > Compaction",
		}},
		{"a heading ends a passage", []string{
			"# Storage engines\n\nIntro paragraph.\n\n## Write-ahead logging",
			"The log is appended and fsynced first.\n\n### Checkpoints",
			"A checkpoint bounds the log to replay.",
		}, []string{
			"Storage engines",
			"Storage engines > Write-ahead logging",
			"Storage engines > Write-ahead logging > Checkpoints",
		}},
		{"no headings", []string{"Plain text.", "More plain text."}, []string{"", ""}},
		{"a deeper heading first", []string{"### Notes\n\nText.", "# Top\n\nText."}, []string{"Notes", "Top"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Join(tc.passages, "\n\n")
			units := make([]Problem, len(tc.passages))
			d := &cutDocument{text: text, title: "Title", blocks: scanBlocks(text, syntaxMarkdown)}
			at := 0
			for i, p := range tc.passages {
				units[i] = Problem{Text: p, PassageIndex: int32(i)}
				d.cuts = append(d.cuts, passageCut{Start: at, End: at + len(p)})
				at += len(p) + 2
			}
			units = withDocContext(units, d, 12000)
			var got []string
			for i, u := range units {
				got = append(got, u.Section)
				if u.PassageCount != int32(len(units)) || u.Doc != units[0].Doc {
					t.Errorf("passage %d: count %d of %d, shares the document's context: %v", i, u.PassageCount, len(units), u.Doc == units[0].Doc)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("heading paths:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	units := documentUnits("doc.md", "Storage engines", "src", sectionedDoc, documentInput{cut: CutOptions{limit: 200}, analysisChars: 1000}, syntaxMarkdown, false)
	doc := units[0].Doc
	if wantOutline := "- Storage engines\n  - Write-ahead logging\n    - Checkpoints\n  - Compaction"; doc.Outline != wantOutline {
		t.Errorf("outline %q, want %q (a comment inside a code block is no heading)", doc.Outline, wantOutline)
	}
	if doc.Cut || doc.Head != strings.TrimSpace(sectionedDoc) || doc.Title != "Storage engines" {
		t.Errorf("a document shorter than analysis_chars is read whole: cut %v, head %d bytes", doc.Cut, len(doc.Head))
	}
}

// TestAnalysisRequestIsTheDocuments: every passage of a document sends the
// same analysis request (so the cache makes it one), reading the
// document's beginning within analysis_chars and its outline; another
// document sends another.
func TestAnalysisRequestIsTheDocuments(t *testing.T) {
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat(sectionedDoc+"\n", 20) // about 8,000 characters
	units := documentUnits("doc.md", "Storage engines", "src", long, documentInput{cut: CutOptions{limit: 700}, analysisChars: 2000}, syntaxMarkdown, false)
	if len(units) < 8 {
		t.Fatalf("only %d passages", len(units))
	}
	first, err := ps.GroundedAnalyzeMessages(units[0].DocumentView())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units[1:] {
		msgs, _ := ps.GroundedAnalyzeMessages(u.DocumentView())
		if !reflect.DeepEqual(msgs, first) {
			t.Fatalf("passage %s sends another analysis request than passage 0", u.ID)
		}
	}
	user := first[len(first)-1].Content
	if doc := units[0].Doc; !doc.Cut || len([]rune(doc.Head)) > 2000 || len([]rune(doc.Head)) < 1500 || !strings.Contains(user, "goes on beyond this beginning") {
		t.Errorf("the analysis of a long document reads %d characters of it (cut %v), want at most 2000 and says it goes on", len([]rune(doc.Head)), doc.Cut)
	}
	other := documentUnits("other.md", "Other", "src", "Another document entirely.", documentInput{cut: CutOptions{limit: 700}, analysisChars: 2000}, syntaxMarkdown, false)
	if msgs, _ := ps.GroundedAnalyzeMessages(other[0].DocumentView()); reflect.DeepEqual(msgs, first) {
		t.Error("two documents send the same analysis request")
	}
}

// FuzzWithDocContext: any document's passages get a context without
// panicking, with valid UTF-8 heading paths and a bounded outline.
func FuzzWithDocContext(f *testing.F) {
	f.Add(sectionedDoc, 200)
	f.Add("# a\n```\n# b\n~~~\n## c\n```\n### d é\n", 50)
	f.Add(strings.Repeat("# "+strings.Repeat("日", 100)+"\n\ntext\n\n", 50), 300)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if !utf8.ValidString(text) || strings.TrimSpace(text) == "" {
			return
		}
		limit = 200 + int(uint(limit)%2000)
		units := documentUnits("d", "", "s", text, documentInput{cut: CutOptions{limit: limit}, analysisChars: 1000}, syntaxMarkdown, true)
		for _, u := range units {
			if !utf8.ValidString(u.Section) || !utf8.ValidString(u.Doc.Outline) || !utf8.ValidString(u.Doc.Head) {
				t.Fatalf("invalid UTF-8 in the context of passage %d", u.PassageIndex)
			}
			if len(u.Doc.Outline) > maxOutlineBytes+len("\n(more headings left out)") {
				t.Fatalf("outline of %d bytes", len(u.Doc.Outline))
			}
		}
	})
}

// TestHeadingsFollowTheCuttersRules: the outline and the heading path read
// fences and headings by the cutter's rules, so a passage's section is the
// one the cutter kept its heading with. A longer fence is closed only by a
// fence as long; a fence line with an info string closes nothing; a closing
// run of '#' goes, a '#' that ends a word stays.
func TestHeadingsFollowTheCuttersRules(t *testing.T) {
	doc := "# Languages\n\n" +
		"````markdown\n```\n# Not a heading: inside the longer fence\n```\n````\n\n" +
		"## C# ##\n\n```go\n```python\n# not a heading either\n```\n\n" +
		"### Generics\n\nText.\n"
	var got []string
	blocks := scanBlocks(doc, syntaxMarkdown)
	headings(blocks, func(level int, title string) { got = append(got, fmt.Sprint(level, " ", title)) })
	want := []string{"1 Languages", "2 C#", "3 Generics"}
	if !slices.Equal(got, want) {
		t.Errorf("headings %q, want %q", got, want)
	}
	if paths := sectionPaths(blocks, []passageCut{{Start: 0, End: len(doc)}}); paths[0] != "Languages" {
		t.Errorf("the section path of the whole document is %q", paths[0])
	}
	for line, want := range map[string]int{"#": 1, "####### seven": 0, "#hashtag": 0, "    # indented code": 0, "   ### three spaces": 3} {
		if level, _ := headingOf(line); level != want {
			t.Errorf("headingOf(%q) level %d, want %d", line, level, want)
		}
	}
}
