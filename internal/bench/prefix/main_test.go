package main

import (
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestJudgedMeasures: a request's figure is its unshareable characters
// beyond its response's own length (the block without our step tags and
// escapes), its first request per group apart, its tokens as the reply's
// usage said.
func TestJudgedMeasures(t *testing.T) {
	t.Parallel()
	prompt := func(problem, id, shown string) string {
		return "user\x1f<problem>" + problem + "</problem>\n[solution " + id + "]\n" + shown + "\n[end of solution " + id + "]\nGrade it.\x1e"
	}
	recs := []sim.RecordedPrompt{
		{Kind: sim.KindSatisfy, Prompt: prompt("p", "0000000000000001", "<step n=\"1\">\n### Step 1: a &lt;b"), Unshared: 100, PromptTokens: 50, CachedTokens: 0},
		{Kind: sim.KindSatisfy, Prompt: prompt("p", "0000000000000002", "xyz"), Unshared: 40, PromptTokens: 50, CachedTokens: 32},
		{Kind: sim.KindSatisfy, Prompt: prompt("p", "0000000000000003", "xyz"), Unshared: 40, PromptTokens: 50, CachedTokens: 32, Repair: true},
		{Kind: sim.KindJudgeBatch, Prompt: prompt("p", "0000000000000004", "xyz"), Unshared: 999},
	}
	f := judged(recs, sim.KindSatisfy, "solution", groupOf("math"), nil)
	// own lengths: "### Step 1: a <b" is 16; "xyz" is 3.
	if f.requests != 2 || f.unshared != (100-16+40-3)/2.0 || f.warmRequests != 1 || f.unsharedWarm != 37 {
		t.Errorf("figures %+v", f)
	}
	if f.uncached != (50+18)/2.0 || f.cached != 16 || f.uncachedWarm != 18 || f.cachedWarm != 32 {
		t.Errorf("tokens %+v", f)
	}
	only := judged(recs, sim.KindSatisfy, "solution", groupOf("math"), map[string]bool{"0000000000000002": true})
	if only.requests != 1 || only.unshared != 37 {
		t.Errorf("only one block: %+v", only)
	}
	ds := []time.Duration{5, 1, 4, 2, 3}
	if quantile(ds, 0.5) != 3 || quantile(ds, 0.99) != 5 {
		t.Errorf("quantiles %v %v", quantile(ds, 0.5), quantile(ds, 0.99))
	}
}
