package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestEmptyCorpusSaysWhy: a run that finishes without a record (no
// rollout was ever correct, so selection left every problem out) says so
// as an empty result, with the cause, and keeps a sample of what was
// rejected, the rollouts' tails among it, in report.json for distill
// status (issue 43, item 3: it finished as a success with an empty corpus,
// and the failed rollouts were kept nowhere readable).
func TestEmptyCorpusSaysWhy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := runtest.MakeProblems(4)
	input := filepath.Join(dir, "problems.jsonl")
	runtest.WriteJSONL(t, input, rows)
	_, url := runtest.StartSim(t, sim.Config{}) // no answers: every rollout is wrong
	j := runtest.TestJob(input, filepath.Join(dir, "run"), url)
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	why := rep.EmptyReason()
	if !strings.Contains(why, "the corpus is empty") || !strings.Contains(why, "all 4 problems were left out by selection") ||
		!strings.Contains(why, "no rollout was correct") {
		t.Errorf("EmptyReason %q", why)
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, j.Out)
	lines := strings.Split(strings.TrimSpace(sum.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "the corpus is empty") {
		t.Errorf("the summary's last line is %q, not the cause", last)
	}
	b, err := os.ReadFile(filepath.Join(j.Out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Rejected []struct {
			ID, Stage, Reason, Answer string
			Rollouts                  []struct {
				Extracted    string `json:"extracted_answer"`
				FinishReason string `json:"finish_reason"`
				Tail         string `json:"tail"`
			} `json:"rollouts"`
		} `json:"rejected_sample"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Rejected) == 0 || raw.Rejected[0].Stage != "select" || raw.Rejected[0].Answer == "" || len(raw.Rejected[0].Rollouts) == 0 ||
		raw.Rejected[0].Rollouts[0].Tail == "" || len(raw.Rejected[0].Rollouts[0].Tail) > 400 {
		t.Errorf("report.json's rejected_sample: %+v", raw.Rejected)
	}
	st, err := ReadStatus(j.Out)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	st.WriteText(&text)
	if !strings.Contains(text.String(), "the corpus is empty") || !strings.Contains(text.String(), raw.Rejected[0].Rollouts[0].Tail[len(raw.Rejected[0].Rollouts[0].Tail)-20:]) {
		t.Errorf("distill status does not show the cause and the rejected rollouts' tails:\n%s", text.String())
	}
}
