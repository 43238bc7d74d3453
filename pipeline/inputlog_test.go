package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestInputLogIsShort: a first run does not say its input "grew since the
// last session" (there was none), and a run whose input did grow by many
// files says so in a short line naming the first few and counting the
// rest (issue 43, item 10: every file on one 53 KB line).
func TestInputLogIsShort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	// Every file holds the same text: the log line is about files, and
	// their passages are one passage (the rest duplicates), so the runs
	// ask the model about one passage, not seventy.
	text := "# Heat pipes\n\n" + strings.Repeat("Heat moves from the hot end to the cold end by the working fluid of the pipe. ", 3)
	for i := range 40 {
		runtest.WriteFile(t, filepath.Join(docs, fmt.Sprintf("doc-%02d.md", i)), text)
	}
	_, url := runtest.StartSim(t, sim.Config{})
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	j.Empirical.Enabled = false
	var first strings.Builder
	runJob(t, j, Options{HTTPClient: runtest.InProcess, Logger: runtest.TextLogger(&first)})
	if strings.Contains(first.String(), "grew") {
		t.Errorf("a first run says its input grew:\n%s", first.String())
	}
	for i := 40; i < 70; i++ {
		runtest.WriteFile(t, filepath.Join(docs, fmt.Sprintf("doc-%02d.md", i)), text)
	}
	var second strings.Builder
	runJob(t, j, Options{HTTPClient: runtest.InProcess, Logger: runtest.TextLogger(&second)})
	for _, line := range strings.Split(second.String(), "\n") {
		if strings.Contains(line, "grew") && (len(line) > 1000 || !strings.Contains(line, "and 27 more")) {
			t.Errorf("the line about the grown input (%d bytes): %.300q", len(line), line)
		}
	}
	if !strings.Contains(second.String(), "grew") {
		t.Errorf("the second run does not say its input grew:\n%s", second.String())
	}
}
