package pipeline

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestUnusableSatisfactionVerdictKeepsTheRecord: one rollout's satisfaction
// verdict that stays unusable after its repairs does not drop a problem
// whose rubric is distilled and judged: the record is kept, that rollout's
// satisfaction stays empty, the items are measured over the judged rollouts
// (not at all when fewer than two are left), and the report counts it.
func TestUnusableSatisfactionVerdictKeepsTheRecord(t *testing.T) {
	t.Parallel()
	problemNo := regexp.MustCompile(`Problem (\d+):`)
	for _, n := range []int{4, 2} {
		f, tap, opt := inProcessFixture(t, 16, sim.Config{})
		jb := f.job
		jb.Rollout.N = n
		jb.Empirical.Enabled = true
		var mu sync.Mutex
		poisoned := map[string]string{} // problem number -> the satisfy prompt that gets no usable verdict
		tap.handle = func(r *http.Request, kind sim.Kind, msgs []sim.Message) (*http.Response, error) {
			if kind != sim.KindSatisfy {
				return nil, nil
			}
			var prompt string
			for _, m := range msgs {
				if m.Role == "user" {
					prompt = m.Content
					break
				}
			}
			p := problemNo.FindString(prompt)
			mu.Lock()
			defer mu.Unlock()
			if _, ok := poisoned[p]; !ok {
				poisoned[p] = prompt
			}
			if poisoned[p] == prompt { // this rollout's verdict, and its repair, are never usable
				return chatReply(r, "I would rather not judge this solution."), nil
			}
			return nil, nil
		}
		var summary strings.Builder
		rep, err := Run(context.Background(), jb, opt)
		if err != nil {
			t.Fatal(err)
		}
		rep.WriteSummary(&summary, jb.Out)
		if rep.FailuresByStage[job.StageEmpirical] != 0 {
			t.Errorf("n=%d: %d problems failed at the empirical stage for one unusable verdict", n, rep.FailuresByStage[job.StageEmpirical])
		}
		recs := runtest.ReadCorpus(t, jb.Out)
		if len(recs) == 0 {
			t.Fatalf("n=%d: no records", n)
		}
		for id, r := range recs {
			missing := 0
			for _, ro := range r.Rollouts {
				if len(ro.Satisfaction) == 0 {
					missing++
				} else if len(ro.Satisfaction) != len(r.Rubric) {
					t.Errorf("n=%d record %s: %d verdicts for %d items", n, id, len(ro.Satisfaction), len(r.Rubric))
				}
			}
			if missing != 1 {
				t.Errorf("n=%d record %s: %d rollouts without verdicts, want 1", n, id, missing)
			}
			for _, it := range r.Rubric {
				if measured := it.SatRate != nil; measured != (n-1 >= 2) {
					t.Errorf("n=%d record %s item %d: measured=%v over %d judged rollouts", n, id, it.ID, measured, n-1)
				}
			}
		}
		if got := rep.Rollouts.SatisfactionMissing; got != int64(len(recs)) || rep.Rollouts.RecordsMissingVerdicts != int64(len(recs)) {
			t.Errorf("n=%d: report counts %d rollouts without verdicts in %d records, want %d in %d", n, got, rep.Rollouts.RecordsMissingVerdicts, len(recs), len(recs))
		}
		if !strings.Contains(summary.String(), "no usable satisfaction verdict") {
			t.Errorf("n=%d: the summary does not count the missing verdicts:\n%s", n, summary.String())
		}
	}
}
