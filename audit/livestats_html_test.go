package audit

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// TestHTMLLiveStats: the HTML report of a corpus refined from a training
// run's live statistics has the section the text report has, with the
// same figures, the paths escaped; a corpus without them has none.
func TestHTMLLiveStats(t *testing.T) {
	t.Parallel()
	rep := &Report{LiveStats: &corpus.FromStats{
		Source: "runs/demo", StateDir: "state/<run-7>", Replicas: []string{"r1", "r2"},
		Records: 63, Matched: 40, Changed: 12, NotInStats: 20, RubricDiffers: 2, Split: 1, Groups: 517,
		Retired: 9, RetiredKept: 3, Admitted: 4, AdmittedSkipped: 1, VerdictsCleared: 4,
	}}
	page := string(render(t, rep.WriteHTML))
	for _, want := range []string{
		"<h2>Refined from a training run's live statistics</h2>",
		`<tr><th class="l">state directory</th><td class="l">state/&lt;run-7&gt; (replicas r1, r2)</td></tr>`,
		`<tr><th class="l">source</th><td class="l">runs/demo</td></tr>`,
		liveRow("records read", "63"), liveRow("with live statistics of their rubric", "40 (517 groups)"), liveRow("changed", "12"),
		liveRow("never scored", "20"), liveRow("scored with another rubric", "2"), liveRow("kept by two replicas (left as they were)", "1"),
		liveRow("retired and dropped", "9"), liveRow("retired and kept (ANSWER items, the style's rules)", "3"),
		liveRow("elicited and added", "4"), liveRow("elicited, not added (no such type in the style)", "1"),
		"verdicts cleared on the stored rollouts of 4 records",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	rep.LiveStats = nil
	if page := string(render(t, rep.WriteHTML)); strings.Contains(page, "live statistics") {
		t.Error("a corpus not refined from live statistics has a live-statistics section")
	}
}

func liveRow(name, value string) string {
	return `<tr><th class="l">` + name + `</th><td>` + value + `</td></tr>`
}
