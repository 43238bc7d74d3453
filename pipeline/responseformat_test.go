package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestRefusedResponseFormatSaysWhatToSet: a server that refuses
// response_format as llama.cpp does (400 "Failed to initialize samplers")
// fails the stages that send it; the log says at once, and the summary's
// cause line says, what to set: json_object: {...: false} in the job file,
// for every stage that sends it (issue 43, item 8).
func TestRefusedResponseFormatSaysWhatToSet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, docs, 3)
	_, url := runtest.StartSim(t, sim.Config{RefuseResponseFormat: true})
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	var log strings.Builder
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess, Logger: runtest.TextLogger(&log)})
	if rep.FailuresByStage["analyze"] == 0 {
		t.Fatalf("failures by stage %v; want the analyses refused", rep.FailuresByStage)
	}
	const want = "json_object: {analyze: false, synthesize: false, judge: false}"
	if !strings.Contains(log.String(), "Failed to initialize samplers") || !strings.Contains(log.String(), want) || strings.Count(log.String(), want) > 1 {
		t.Errorf("the log does not say once what to set:\n%s", log.String())
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	if !strings.Contains(sum.String(), "analyze, most common cause") || !strings.Contains(sum.String(), want) {
		t.Errorf("the summary's cause line does not say what to set:\n%s", sum.String())
	}
}
