package pipeline

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/job"
)

// TestRunReportsCachedTokens: against a server whose prefix cache reports
// the prompt tokens it reused, distill run counts them apart (report.json's
// llm stages and total), prices them at the job's cached_prompt_per_mtok,
// and its summary says how many prompt tokens were cached.
func TestRunReportsCachedTokens(t *testing.T) {
	t.Parallel()
	f, _, opt := inProcessFixture(t, 6, sim.Config{PrefixCache: sim.PrefixCache{On: true}})
	jb := f.job
	jb.Rollout.N = 6
	jb.Empirical.Enabled = true
	jb.Prices = map[string]job.Price{"simulated": {Prompt: 2, CachedPrompt: 0.5, Completion: 8}}
	rep := runJob(t, jb, opt)
	tot := rep.LLM.Total
	if tot.CachedPromptTokens <= 0 || tot.CachedPromptTokens >= tot.PromptTokens {
		t.Fatalf("cached prompt tokens %d of %d: want some and not all", tot.CachedPromptTokens, tot.PromptTokens)
	}
	want := (float64(tot.PromptTokens-tot.CachedPromptTokens)*2 + float64(tot.CachedPromptTokens)*0.5 + float64(tot.CompletionTokens)*8) / 1e6
	if math.Abs(tot.CostUSD-want) > 1e-9 {
		t.Errorf("cost %v, want %v (cached prompt tokens at their own price)", tot.CostUSD, want)
	}
	if st := rep.LLM.Stages[job.StageEmpirical]; st.CachedPromptTokens == 0 {
		t.Errorf("the empirical stage's judge requests reused no prefix: %+v", st)
	}
	var sum strings.Builder
	rep.WriteSummary(&sum, jb.Out)
	if !strings.Contains(sum.String(), " cached)") {
		t.Errorf("the summary does not say how many prompt tokens were cached:\n%s", sum.String())
	}
	b, err := os.ReadFile(filepath.Join(jb.Out, "report.json"))
	if err != nil || !strings.Contains(string(b), `"cached_prompt_tokens"`) {
		t.Errorf("report.json lacks cached_prompt_tokens (%v)", err)
	}
}
