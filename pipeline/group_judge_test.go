package pipeline

import (
	"fmt"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// requestKinds counts recorded prompts by kind (repairs apart).
func requestKinds(rec *sim.PromptRecorder) map[sim.Kind]int {
	out := map[sim.Kind]int{}
	for _, p := range rec.Prompts() {
		if !p.Repair {
			out[p.Kind]++
		}
	}
	return out
}

// empiricalVerdicts are a corpus's empirical verdicts, by record and
// rollout (math) or by record, question and answer (grounded).
func empiricalVerdicts(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, r := range runtest.ReadCorpus(t, dir) {
		for _, ro := range r.Rollouts {
			out[fmt.Sprintf("%s/%d", id, ro.Index)] = fmt.Sprint(ro.Satisfaction)
		}
		if r.Grounded == nil {
			continue
		}
		for _, q := range r.Grounded.Questions {
			for _, a := range q.Answers {
				out[fmt.Sprintf("%s/%d/%d", id, q.Index, a.Index)] = fmt.Sprint(a.Scores)
			}
		}
	}
	return out
}

// TestEmpiricalGroupJudging: with judge.group the empirical stage judges
// all rollouts of a record (all answers of a question) in one request,
// math and grounded, and every rollout gets the verdicts it gets judged
// one request each; with a judge that cannot judge some responses, a group
// request that fails is asked again one response at a time, so the corpus
// is the same as without group judging.
func TestEmpiricalGroupJudging(t *testing.T) {
	t.Parallel()
	for _, fail := range []float64{0, 0.2} {
		t.Run(fmt.Sprintf("math/fail=%v", fail), func(t *testing.T) {
			t.Parallel()
			// The empirical stage's judge fails on a share of the rollouts
			// (every reply about them unusable): a group holding one fails.
			profile := map[string]sim.JudgeProfile{"flaky": {Fail: fail}}
			run := func(group bool) (map[string]string, map[sim.Kind]int) {
				rec := &sim.PromptRecorder{}
				f, _, opt := inProcessFixture(t, 4, sim.Config{Prompts: rec, Judges: profile})
				jb := f.job
				jb.Rollout.N = 6
				jb.Empirical.Enabled = true
				jb.Empirical.Model = "flaky"
				jb.Prices["flaky"] = jb.Prices["simulated"]
				jb.Judge.Group = group
				runJob(t, jb, opt)
				return empiricalVerdicts(t, jb.Out), requestKinds(rec)
			}
			alone, aloneKinds := run(false)
			together, kinds := run(true)
			if fmt.Sprint(alone) != fmt.Sprint(together) {
				t.Errorf("verdicts differ with judge.group:\nalone    %v\ntogether %v", alone, together)
			}
			records := len(alone) / 6
			if kinds[sim.KindSatisfyGroup] != records || fail == 0 && kinds[sim.KindSatisfy] != 0 || fail > 0 && kinds[sim.KindSatisfy] == 0 {
				t.Errorf("judge requests by kind %v for %d records (one request each without group: %v)", kinds, records, aloneKinds)
			}
		})
	}
	// A record's rollouts over the response budget together (512
	// estimated tokens: about two of the simulated rollouts) are asked in
	// parts of two, with the same verdicts, none refused.
	t.Run("math/parts", func(t *testing.T) {
		t.Parallel()
		run := func(group bool) (map[string]string, map[sim.Kind]int) {
			rec := &sim.PromptRecorder{}
			f, _, opt := inProcessFixture(t, 4, sim.Config{Prompts: rec})
			jb := f.job
			jb.Rollout.N = 6
			jb.Empirical.Enabled = true
			jb.Empirical.MaxResponseTokens = 512
			jb.Judge.Group = group
			runJob(t, jb, opt)
			return empiricalVerdicts(t, jb.Out), requestKinds(rec)
		}
		alone, _ := run(false)
		together, kinds := run(true)
		if fmt.Sprint(alone) != fmt.Sprint(together) {
			t.Errorf("verdicts differ with judge.group in parts:\nalone    %v\ntogether %v", alone, together)
		}
		if records := len(alone) / 6; kinds[sim.KindSatisfyGroup] < 2*records {
			t.Errorf("judge requests by kind %v for %d records: want each record's 6 rollouts in parts", kinds, records)
		}
	})
	t.Run("grounded", func(t *testing.T) {
		t.Parallel()
		run := func(group bool) (map[string]string, map[sim.Kind]int) {
			rec := &sim.PromptRecorder{}
			jb, opt := groundedTapFixtureWith(t, 2, sim.Config{Prompts: rec}, nil)
			jb.Rollout.N = 4
			jb.Judge.Group = group
			runJob(t, jb, opt)
			return empiricalVerdicts(t, jb.Out), requestKinds(rec)
		}
		alone, _ := run(false)
		together, kinds := run(true)
		if fmt.Sprint(alone) != fmt.Sprint(together) {
			t.Errorf("scores differ with judge.group:\nalone    %v\ntogether %v", alone, together)
		}
		if kinds[sim.KindScoreGroundedGroup] == 0 || kinds[sim.KindScoreGrounded] != 0 {
			t.Errorf("judge requests by kind %v: want only group requests", kinds)
		}
	})
}
