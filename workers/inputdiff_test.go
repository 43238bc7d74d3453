package workers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// TestInputsDifferIsShort: workers that read 400 document files, all
// different, are told apart in a line that names the first few files and
// counts the rest, not in a 32 KB line (issue 43, item 10).
func TestInputsDifferIsShort(t *testing.T) {
	t.Parallel()
	var a, b []corpus.InputFile
	for i := range 400 {
		a = append(a, corpus.InputFile{Path: fmt.Sprintf("/data/site/content/en/section-%03d/page.md", i), Rows: 1, Bytes: 1000, XXHash64: "aaaaaaaaaaaaaaaa"})
		b = append(b, corpus.InputFile{Path: fmt.Sprintf("/data/site/content/en/section-%03d/page.md", i), Rows: 1, Bytes: 1001, XXHash64: "bbbbbbbbbbbbbbbb"})
	}
	got := inputsDiffer([]workerInput{{"part-0", a}, {"part-1", b}})
	if len(got) != 1 || len(got[0]) > 1500 || !strings.Contains(got[0], "and 397 more files differ") || !strings.Contains(got[0], "section-000") {
		t.Errorf("%d lines, the first %d bytes: %.400q", len(got), len(got[0]), got[0])
	}
}
