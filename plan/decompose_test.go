package plan

import (
	"math"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/job"
	"github.com/rubricforge/rubricforge/pipeline"
	"github.com/rubricforge/rubricforge/schema"
)

// TestPlanOfADecomposition checks, on figures made by hand, that a plan of
// refine --decompose's decomposition counts its decompose stage: listed
// first, priced at the distiller's model (online, and at the batch rate
// when the distill section is in batch mode), its requests on the
// distiller's endpoint for the rate limit. 10 records sampled of 100, each
// with 2 decompose requests of 1,000 prompt and 500 completion tokens at
// $1/$2 per million (online $0.002 a request), 1 judge and 8 empirical
// requests.
func TestPlanOfADecomposition(t *testing.T) {
	t.Parallel()
	const distillURL, judgeURL = "http://distill/v1", "http://judge/v1"
	for _, tc := range []struct {
		name      string
		batch     bool
		wantCost  float64 // the decompose stage's, for the 100 records
		wantBatch []string
	}{
		{"online", false, 100 * 2 * 0.002, nil},
		{"distill in batch mode", true, 100 * 2 * 0.002 * 0.5, []string{pipeline.StageDecompose}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jb := job.DefaultJob()
			jb.Rollout.BaseURL, jb.Rollout.Model = judgeURL, "judge-model"
			jb.Distill.BaseURL, jb.Distill.Model = distillURL, "distill-model"
			jb.Judge.Enabled, jb.Empirical.Enabled = true, true
			jb.Prices = map[string]job.Price{"distill-model": {Prompt: 1, Completion: 2, BatchRate: 0.5}}
			if tc.batch {
				jb.Distill.Mode = job.ModeBatch
			}
			jb.Normalize()
			jb.Limits.Concurrency = 10
			jb.Limits.RequestsPerMinute = 60
			probs := make([]corpus.PilotProblem, 10)
			for i := range probs {
				probs[i] = corpus.PilotProblem{ID: string(rune('a' + i)), Outcome: corpus.OutcomeRecord, Seconds: 1,
					Stages: map[string]schema.Usage{
						pipeline.StageDecompose: {Requests: 2, PromptTokens: 2000, CompletionTokens: 1000},
						job.StageJudge:          {Requests: 1}, job.StageEmpirical: {Requests: 8}}}
			}
			in := &planInput{unique: 100, sample: &Sample{}, decompose: true}
			p := project(&jb, in, probs, 100, &pipeline.Report{}, nil)
			var names []string
			for _, s := range p.Stages {
				names = append(names, s.Stage)
			}
			if want := []string{pipeline.StageDecompose, job.StageJudge, job.StageEmpirical}; !slices.Equal(names, want) {
				t.Fatalf("stages %v, want %v", names, want)
			}
			dec := p.Stages[0]
			if dec.Requests.Value != 200 || dec.PromptTokens.Value != 200000 || math.Abs(dec.CostUSD.Value-tc.wantCost) > 1e-9 {
				t.Errorf("decompose: %.0f requests, %.0f prompt tokens, $%.4f; want 200, 200000, $%.4f", dec.Requests.Value, dec.PromptTokens.Value, dec.CostUSD.Value, tc.wantCost)
			}
			if p.Total.Requests.Value != 1100 {
				t.Errorf("total requests %.0f, want 1100", p.Total.Requests.Value)
			}
			if !slices.Equal(p.BatchStages, tc.wantBatch) {
				t.Errorf("batch stages %v, want %v", p.BatchStages, tc.wantBatch)
			}
			i := slices.IndexFunc(p.Endpoints, func(e corpus.PlanEndpoint) bool { return e.BaseURL == distillURL })
			if i < 0 || !slices.Equal(p.Endpoints[i].Stages, []string{pipeline.StageDecompose}) {
				t.Errorf("endpoints %+v: want the distiller's to carry the decompose stage alone", p.Endpoints)
			}
			// The judge endpoint's 900 requests at 60/min bind: 900 s, plus a record's 1 s.
			if p.Wall.Binding != ConstraintRate || math.Abs(p.Wall.WholeSeconds.Value-901) > 1e-6 {
				t.Errorf("wall %.0f s bound by %q; want %d s by the rate limit", p.Wall.WholeSeconds.Value, p.Wall.Binding, 901)
			}
		})
	}
}
