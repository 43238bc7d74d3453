package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroundedWording: a grounded corpus's report speaks of passages, not
// problems (issue 43, item 10: "failed problems' spend").
func TestGroundedWording(t *testing.T) {
	t.Parallel()
	rec := groundedRecord(1, 1)
	rec.Usage = schema.Usage{Requests: 4, PromptTokens: 100, CompletionTokens: 50}
	text := string(render(t, auditPath(t, Options{}, groundedRun(t, []schema.Record{rec})).WriteText))
	if strings.Contains(text, "problems") || !strings.Contains(text, "failed and left-out passages' spend") {
		t.Errorf("the grounded report speaks of problems:\n%s", text)
	}
}

// TestPanelOfOneJudgeWording: records judged by a panel of one judge are
// not "judged by panels"; the heading counts the panel's judges (issue
// 43, item 10).
func TestPanelOfOneJudgeWording(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()[:6]
	for i := range recs {
		synthcorpus.AddPanel(&recs[i], 1, synthcorpus.PanelJudge{Name: "solo", Model: "m1"})
	}
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 6)
	text := string(render(t, auditPath(t, Options{}, dir).WriteText))
	if strings.Contains(text, "judged by panels") || !strings.Contains(text, "Judge panel: 6 records judged by a panel of 1 judge") {
		t.Errorf("the panel heading:\n%s", text[strings.Index(text, "Judge panel"):][:200])
	}
}
