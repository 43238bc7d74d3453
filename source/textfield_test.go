package source

import (
	"strings"
	"testing"
)

// TestNumericTextIsNoDocument: a documents row whose text field is a
// number is a bad row that says so, not a document "12345" (issue 43, item
// 10); a number stays usable as a document's id or title, and as a
// problem's answer.
func TestNumericTextIsNoDocument(t *testing.T) {
	in := docSpec(1000)
	in.Fields.Text, in.Fields.ID, in.Fields.Title = "text", "id", "title"
	for _, line := range []string{`{"text": 12345}`, `{"text": -1.5e3, "id": "a"}`} {
		units, msg := unitsFromJSON([]byte(line), in)
		if len(units) != 0 || !strings.Contains(msg, `field "text" is a number`) {
			t.Errorf("%s: %d units, message %q; want a bad row saying the text is a number", line, len(units), msg)
		}
	}
	units, msg := unitsFromJSON([]byte(`{"text": "Real text.", "id": 7, "title": 2024}`), in)
	if msg != "" || len(units) != 1 || units[0].DocID != "7" || units[0].Title != "2024" {
		t.Errorf("a numeric id and title: %+v, %q", units, msg)
	}
	p := Spec{}
	p.Fields.Problem, p.Fields.Answer = "problem", "answer"
	if units, msg := unitsFromJSON([]byte(`{"problem": "1+1?", "answer": 2}`), p); msg != "" || len(units) != 1 || units[0].Answer != "2" {
		t.Errorf("a numeric answer: %+v, %q", units, msg)
	}
}
