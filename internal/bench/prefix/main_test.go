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

// TestGroupJudgedMeasures: group judging's figures count a request once
// and each measured response it shows, its tokens shared among them.
func TestGroupJudgedMeasures(t *testing.T) {
	t.Parallel()
	block := func(id string) string { return "\n[solution " + id + "]\nx\n[end of solution " + id + "]\n" }
	recs := []sim.RecordedPrompt{
		{Kind: sim.KindSatisfyGroup, Prompt: "<problem>p</problem>" + block("0000000000000001") + block("0000000000000002") + block("0000000000000009"), PromptTokens: 100, CachedTokens: 40},
		{Kind: sim.KindSatisfy, Prompt: "<problem>p</problem>" + block("0000000000000003"), PromptTokens: 50},
		{Kind: sim.KindSatisfy, Prompt: "<problem>p</problem>" + block("0000000000000003"), PromptTokens: 50, Repair: true},
		{Kind: sim.KindJudgeBatch, Prompt: "<problem>p</problem>", PromptTokens: 70},
	}
	only := map[string]bool{"0000000000000001": true, "0000000000000002": true, "0000000000000003": true}
	g := groupJudged(recs, "solution", only)
	if g.requests != 2 || g.responses != 3 || g.uncached != (60+50)/3.0 || g.cached != 40/3.0 {
		t.Errorf("figures %+v", g)
	}
	if all := groupJudged(recs, "solution", nil); all.responses != 4 {
		t.Errorf("without a filter: %+v", all)
	}
}
