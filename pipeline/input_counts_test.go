package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestInputLossesAreNamed: what a grounded run did not make records of is
// said with counts in the log, report.json and the summary: files skipped
// as no documents (by extension), passages left out (with their share),
// duplicate documents (issue 43, item 5: .rst and .mdx files were ignored
// without a word, and a quarter of a site's passages left out quietly).
func TestInputLossesAreNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	para := strings.Repeat("A heat pipe moves heat by evaporating a working fluid at the hot end and condensing it at the cold end. ", 3)
	runtest.WriteFile(t, filepath.Join(docs, "a.md"), "# Heat pipes\n\n"+para)
	runtest.WriteFile(t, filepath.Join(docs, "b.rst"), "Wicks\n=====\n\n"+para+" A wick returns the liquid.")
	runtest.WriteFile(t, filepath.Join(docs, "c.md"), "# Heat pipes\n\n"+para) // a copy of a.md
	runtest.WriteFile(t, filepath.Join(docs, "short.mdx"), "Edit this page.")
	runtest.WriteFile(t, filepath.Join(docs, "img", "pipe.png"), "\x89PNG")
	runtest.WriteFile(t, filepath.Join(docs, "img", "wick.svg"), "<svg/>")
	_, url := runtest.StartSim(t, sim.Config{})
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	j.Grounded.PassageChars, j.Grounded.MinPassageChars = 2000, 100
	var log strings.Builder
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess, Logger: runtest.TextLogger(&log)})

	for _, want := range []string{"2 files that are not documents (1 .png, 1 .svg)", "left out", "duplicate"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
	var raw struct {
		Skipped struct {
			Files int64 `json:"files"`
			ByExt []struct {
				Ext   string `json:"ext"`
				Files int64  `json:"files"`
			} `json:"by_extension"`
		} `json:"skipped_files"`
	}
	readReportJSON(t, j.Out, &raw)
	if raw.Skipped.Files != 2 || len(raw.Skipped.ByExt) != 2 {
		t.Errorf("report.json's skipped_files: %+v", raw.Skipped)
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	for _, want := range []string{
		"skipped 2 files that are not documents (1 .png, 1 .svg)",
		"duplicate documents: 1 left out",
		"left out by stage: passage=1 (33.3% of 3 passages;",
	} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("the summary does not say %q:\n%s", want, sum.String())
		}
	}
}
