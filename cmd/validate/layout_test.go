package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestRejudgeLayoutAndCachedPrice: validate rejudge --judge-layout asks in
// that layout (paper: the template's hash differs), and --price
// MODEL=PROMPT,COMPLETION,CACHED prices the prompt tokens the server's
// prefix cache reused at the third price; a bad layout is a usage error.
func TestRejudgeLayoutAndCachedPrice(t *testing.T) {
	t.Parallel()
	_, url, stop, err := sim.Start(sim.Config{Seed: 2, PrefixCache: sim.PrefixCache{On: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeRun(t, 12, nil)
	type result struct {
		Judge struct{ Template string } `json:"judge"`
		LLM   struct {
			PromptTokens       int64   `json:"prompt_tokens"`
			CachedPromptTokens int64   `json:"cached_prompt_tokens"`
			CompletionTokens   int64   `json:"completion_tokens"`
			CostUSD            float64 `json:"cost_usd"`
		} `json:"llm"`
	}
	templates := map[string]string{}
	for _, layout := range []string{"cache", "paper"} {
		code, stdout, stderr := validate(t, nil, "rejudge", dir, "--base-url", url, "--model", "simulated", "--sample", "30", "--cache", "",
			"--judge-layout", layout, "--price", "simulated=2,8,0.5", "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", layout, code, stderr)
		}
		var r result
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		u := r.LLM
		want := (float64(u.PromptTokens-u.CachedPromptTokens)*2 + float64(u.CachedPromptTokens)*0.5 + float64(u.CompletionTokens)*8) / 1e6
		if u.CachedPromptTokens <= 0 || math.Abs(u.CostUSD-want) > 1e-9 {
			t.Errorf("%s: usage %+v, want some cached prompt tokens and cost %v", layout, u, want)
		}
		templates[layout] = r.Judge.Template
	}
	if templates["cache"] == "" || templates["cache"] == templates["paper"] {
		t.Errorf("the two layouts' templates: %v", templates)
	}
	code, _, stderr := validate(t, nil, "rejudge", dir, "--base-url", url, "--model", "simulated", "--judge-layout", "newspaper", "--cache", filepath.Join(t.TempDir(), "c.db"))
	if code != exitUsage || !strings.Contains(stderr, "--judge-layout") {
		t.Errorf("a bad layout: exit %d, stderr %q", code, stderr)
	}
}
