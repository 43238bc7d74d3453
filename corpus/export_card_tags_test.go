package corpus

import (
	"strings"
	"testing"
)

// TestGroundedCardTags: the dataset card of a grounded export is tagged
// for what it holds, questions grounded in documents, not math (issue 43,
// item 10).
func TestGroundedCardTags(t *testing.T) {
	if _, err := exportIn(t, groundedFixture(), quietExportOptions(FormatVerl, "export")); err != nil {
		t.Fatal(err)
	}
	card := string(dirFiles(t, "export")["README.md"])
	front := card[:strings.Index(card[4:], "---")+4]
	if strings.Contains(front, "- math") || !strings.Contains(front, "- question-answering") {
		t.Errorf("the card's front matter:\n%s", front)
	}
}
