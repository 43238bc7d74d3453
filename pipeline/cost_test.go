package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"
)

// TestCostNeedsPrices: a cost budget, or a cost figure in the report, for a
// model without a price is a usage error naming the model and the prices
// key, unless the model is declared free.
func TestCostNeedsPrices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		modify func(j *job.Job)
		want   []string // empty: the job is valid
	}{
		{"budget without any price", func(j *job.Job) { j.Prices = nil; j.Budget.MaxCostUSD = 0.01 },
			[]string{`model "simulated"`, "prices", "max_cost_usd is 0.01", "--free-models simulated"}},
		{"a price for one model, not for the judge's", func(j *job.Job) {
			j.Judge.Model = "gpt-judge"
		}, []string{`model "gpt-judge" (judge) has no price`, "prompt_per_mtok"}},
		{"a free model", func(j *job.Job) { j.Prices = map[string]job.Price{"simulated": {}}; j.Budget.MaxCostUSD = 1 }, nil},
		{"no prices and no cost budget", func(j *job.Job) { j.Prices = nil; j.Budget.MaxTokens = 1000 }, nil},
		{"a disabled stage's model needs no price", func(j *job.Job) { j.Judge.Enabled = false; j.Judge.Model = "gpt-judge" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := runtest.TestJob("in.jsonl", "run", "http://127.0.0.1:1/v1")
			tc.modify(&j)
			j.Normalize()
			err := j.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ue *job.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want a usage error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestFreeModelInJobFile: `MODEL: 0` under prices declares a free model.
func TestFreeModelInJobFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	os.WriteFile(path, []byte("input: {paths: [in.jsonl]}\nout: run\nrollout: {base_url: http://127.0.0.1:1/v1, model: local}\nprices: {local: 0}\nbudget: {max_cost_usd: 5}\n"), 0o644)
	jb, err := job.PrepareJob(path, nil)
	if err != nil {
		t.Fatalf("a free model with a cost budget: %v", err)
	}
	if p, ok := jb.Prices["local"]; !ok || p != (job.Price{}) {
		t.Errorf("prices: %+v", jb.Prices)
	}
	os.WriteFile(path, []byte("prices: {local: 3}\n"), 0o644)
	if _, err := job.LoadJobFile(path); err == nil || !strings.Contains(err.Error(), "prices.local") || !strings.Contains(err.Error(), "prompt_per_mtok") {
		t.Errorf("a bare non-zero price: %v", err)
	}
}
