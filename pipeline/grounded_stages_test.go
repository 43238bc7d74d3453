package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/llmtest"
)

// longDocument is a document of one paragraph-rich passage of about n
// bytes.
func longDocument(n int) string {
	var b strings.Builder
	b.WriteString("# Regenerative braking\n\n")
	for b.Len() < n {
		b.WriteString("The inverter returns kinetic energy to the battery because the motor runs as a generator while the vehicle slows. " +
			"Therefore the controller limits regenerative torque whenever the battery temperature leaves its nominal envelope.\n\n")
	}
	return b.String()
}

// TestGroundedJudgeSeesPassageWithinBudget: a 20,000-character passage is
// judged (validity and empirical scores) by a judge whose context holds
// 4,096 tokens: the judge and empirical stages show it cut to
// grounded.judge_passage_tokens, every judge request is answered, the
// record is made, and the report counts the passage as cut.
func TestGroundedJudgeSeesPassageWithinBudget(t *testing.T) {
	for _, mode := range []string{"batch", "item"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "docs", "regen.md"), longDocument(20_000))
			_, url := startSim(t, llmtest.Config{})
			judge, small := startSim(t, llmtest.Config{ContextTokens: 4096, KeepLog: true})
			j := groundedTestJob(filepath.Join(dir, "docs"), filepath.Join(dir, "run"), url)
			j.Grounded.PassageChars = 30_000
			j.Judge.Mode = mode
			j.Judge.BaseURL, j.Judge.Model = small, "simulated"
			j.Empirical.BaseURL, j.Empirical.Model = small, "simulated"
			j.Rollout.N = 2
			j.Grounded.JudgePassageTokens = 2048 // half the judge's context: the rubric and an answer fit beside it
			rep := runJob(t, j, Options{})
			if rep.Problems.Failed != 0 || rep.CorpusRows != 1 {
				t.Fatalf("%d records, %d failed (%v): %+v", rep.CorpusRows, rep.Problems.Failed, readFailures(t, j.Out), rep.FailuresByStage)
			}
			if g := rep.Grounded; g == nil || g.JudgePassagesCut != 1 {
				t.Errorf("report's grounded figures %+v: want judge_passages_cut 1", g)
			}
			for _, e := range judge.Log() {
				if e.Status != 200 {
					t.Errorf("the judge endpoint answered %s with %d", e.Kind, e.Status)
				}
			}
		})
	}
}
