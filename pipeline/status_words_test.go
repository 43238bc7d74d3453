package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestStatusSpeaksOfTheLastSession: distill status, read after the run,
// speaks of the run's last session, not of "this session", which is the
// run's own word for itself (issue 43, item 10).
func TestStatusSpeaksOfTheLastSession(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 6, sim.Config{})
	runJob(t, f.Job, Options{HTTPClient: runtest.InProcess})
	st, err := ReadStatus(f.Job.Out)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	st.WriteText(&b)
	if strings.Contains(b.String(), "this session") || !strings.Contains(b.String(), "in the last session") || !strings.Contains(b.String(), "the last session took") {
		t.Errorf("distill status:\n%s", b.String())
	}
	var sum strings.Builder
	st.Report.WriteSummary(&sum, filepath.Clean(f.Job.Out))
	if !strings.Contains(sum.String(), "this session") {
		t.Errorf("the run's own summary lost its words:\n%s", sum.String())
	}
}

// TestGroundedBadFilesAreNotLines: a grounded run names its unusable
// documents (a file of front matter alone, say) as such, not "bad lines".
func TestGroundedBadFilesAreNotLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteFile(t, filepath.Join(docs, "a.md"), "# A\n\n"+strings.Repeat("Heat moves from the hot end to the cold end of the pipe. ", 5))
	runtest.WriteFile(t, filepath.Join(docs, "_index.md"), "---\ntitle: Section\n---\n")
	_, url := runtest.StartSim(t, sim.Config{})
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	if strings.Contains(sum.String(), "bad lines") || !strings.Contains(sum.String(), "1 unusable documents") {
		t.Errorf("summary:\n%s", sum.String())
	}
}
