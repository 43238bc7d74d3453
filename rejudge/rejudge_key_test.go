package rejudge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// TestRejudgeKeyCoversTheJudge: a rejudge that shares a first one's cache
// asks the judge again exactly when something that decides its verdicts
// changed (model, endpoint kind, template, sampling, seed); the same judge
// on another server of its kind is answered from the cache.
func TestRejudgeKeyCoversTheJudge(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()[:12]
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 8)
	srv := sim.New(sim.Config{Seed: 5})
	cache := filepath.Join(t.TempDir(), "cache.db")
	first := rejudge(t, dir, rejudgeConfig(srv, cache, 20, 3))
	if first.Sample.Judged == 0 || srv.Count() == 0 {
		t.Fatalf("the first rejudge judged nothing: %+v", first.Sample)
	}
	tmpl, err := os.ReadFile(filepath.Join("..", "prompts", "templates", "judge_batch.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	promptsDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(promptsDir, "judge_batch.tmpl"), append(tmpl, "{{/* same text, another template */}}"...), 0o644); err != nil {
		t.Fatal(err)
	}
	seven := int64(7)
	cases := []struct {
		name   string
		change func(*Config)
		asked  bool
	}{
		{"nothing", func(*Config) {}, false},
		{"another server of the same kind", func(c *Config) { c.BaseURL = "http://other.invalid/v1" }, false},
		{"model", func(c *Config) { c.Model = "judge-2" }, true},
		{"endpoint kind", func(c *Config) { c.EndpointKind = "vllm" }, true},
		{"template", func(c *Config) { c.PromptsDir = promptsDir }, true},
		{"temperature", func(c *Config) { c.Temperature = 0.5 }, true},
		{"max tokens", func(c *Config) { c.MaxTokens = 3000 }, true},
		{"seed", func(c *Config) { c.JudgeSeed = &seven }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rejudgeConfig(srv, cache, 20, 3)
			tc.change(&cfg)
			before := srv.Count()
			rep := rejudge(t, dir, cfg)
			sent := srv.Count() - before
			switch {
			case tc.asked && sent == 0:
				t.Errorf("the judge was not asked again (usage %+v)", rep.LLM)
			case !tc.asked && sent != 0:
				t.Errorf("%d requests reached the judge; want every verdict from the cache", sent)
			}
		})
	}
}
