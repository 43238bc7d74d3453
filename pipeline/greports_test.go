package pipeline

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/llmtest"
)

// groundedTapFixture is a grounded job over a few documents whose endpoint
// is the simulated one in this process behind a tapTransport.
func groundedTapFixture(t *testing.T, docs int, handle func(r *http.Request, kind llmtest.Kind, msgs []llmtest.Message) (*http.Response, error)) (Job, Options, *llmtest.Server) {
	t.Helper()
	dir := t.TempDir()
	writeDocs(t, filepath.Join(dir, "docs"), docs)
	srv := llmtest.New(llmtest.Config{})
	t.Cleanup(srv.Close)
	tap := &tapTransport{next: srv.Transport(), handle: handle}
	j := groundedTestJob(filepath.Join(dir, "docs"), filepath.Join(dir, "run"), "http://llmtest.invalid/v1")
	return j, Options{HTTPClient: &http.Client{Transport: tap}}, srv
}

// TestGroundedEmpiricalThatJudgedNothing: a reward judge whose every reply
// is unusable leaves every closed-book answer unscored. That is a failure
// of the empirical stage, named in the report and the summary, and its
// criteria are unmeasured, not "not varying".
func TestGroundedEmpiricalThatJudgedNothing(t *testing.T) {
	j, opt, _ := groundedTapFixture(t, 4, func(r *http.Request, kind llmtest.Kind, _ []llmtest.Message) (*http.Response, error) {
		if kind == llmtest.KindScoreGrounded {
			return chatReply(r, "I would rather not score this answer."), nil
		}
		return nil, nil
	})
	rep := runJob(t, j, opt)
	if rep.Grounded == nil || rep.Grounded.ScoredAnswers != 0 || rep.Grounded.UnscoredAnswers == 0 {
		t.Fatalf("grounded figures %+v; want every answer unscored", rep.Grounded)
	}
	if len(rep.StageFailures) != 1 || rep.StageFailures[0].Stage != StageEmpirical {
		t.Errorf("stage failures %+v; want the empirical stage", rep.StageFailures)
	}
	if !rep.SomethingFailed() {
		t.Error("a run whose empirical stage judged nothing does not count as having failures (exit 3)")
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	s := sum.String()
	for _, want := range []string{"stage failed: empirical", "unmeasured"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary does not say %q:\n%s", want, s)
		}
	}
	t.Log(s)
	if strings.Contains(s, "not varying 0") || strings.Contains(s, "no training signal") {
		t.Errorf("summary calls unmeasured criteria not varying:\n%s", s)
	}
}
