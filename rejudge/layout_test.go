package rejudge

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/prompts"
)

// TestRejudgeLayoutAndCachedTokens: a rejudge asks its judge in the layout
// it is given (Config.Layout: its template's hash in the report), and
// against a server that reports the prompt tokens its prefix cache reused
// it counts them (llm.cached_prompt_tokens) and says so in its tokens
// line.
func TestRejudgeLayoutAndCachedTokens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:12], 8)
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range prompts.Layouts {
		srv := sim.New(sim.Config{Seed: 5, PrefixCache: sim.PrefixCache{On: true}})
		cfg := rejudgeConfig(srv, "", 30, 3)
		cfg.Layout = layout
		rep := rejudge(t, dir, cfg)
		if want := set.Hash(layout.Of(prompts.JudgeBatch)); rep.Judge == nil || string(rep.Judge.Template) != want {
			t.Errorf("layout %s: judge %+v, want template %s", layout, rep.Judge, want)
		}
		if u := rep.LLM; u.CachedPromptTokens <= 0 || u.CachedPromptTokens >= u.PromptTokens {
			t.Errorf("layout %s: %d of %d prompt tokens cached; want some (the instructions all requests share)", layout, u.CachedPromptTokens, u.PromptTokens)
		}
		text := string(render(t, rep.WriteText))
		if !strings.Contains(text, " cached)") {
			t.Errorf("layout %s: the tokens line does not say how many were cached:\n%s", layout, text)
		}
		srv.Close()
	}
}
