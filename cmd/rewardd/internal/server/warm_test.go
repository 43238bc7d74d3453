package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
)

// TestScoreGroupWarmsFirst: rewardd sends a group's first judge request
// alone and the others once it is answered, so that a server's prefix
// cache computes the rubric once; with the judge's config AllAtOnce it
// sends them at once.
func TestScoreGroupWarmsFirst(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	group := func(msgs []sim.Message) string {
		for _, m := range msgs {
			if i := strings.Index(m.Content, "<rubric>"); i >= 0 {
				return m.Content[i:]
			}
		}
		return ""
	}
	responses := []string{rewardtest.TwoSteps, rewardtest.MarkedResponse, "The answer is 5. <answer>5</answer>", "### Step 1: Guess.\n6.\n<answer>6</answer>"}
	for _, atOnce := range []bool{false, true} {
		var w *sim.WarmWatch
		h := newHarnessVia(t, nil, func(next http.RoundTripper) http.RoundTripper {
			w = &sim.WarmWatch{Next: next, Kind: sim.KindSatisfy, Group: func(msgs []sim.Message) string {
				g := group(msgs)
				if j := strings.Index(g, "</rubric>"); j >= 0 {
					return g[:j]
				}
				return g
			}}
			return w
		}, func(c *Config, _ *sim.Config) { c.AllAtOnce = atOnce })
		var g struct{ Results []reward.Result }
		h.post("/v1/score_group", mustJSON(t, map[string]any{"label": labelJSON(t, lab), "responses": responses}), &g)
		for i, r := range g.Results {
			if !r.JudgeOK {
				t.Fatalf("response %d: %+v", i, r)
			}
		}
		early, groups := w.Early()
		if groups != 1 || (early == 0) == atOnce {
			t.Errorf("all at once %v: %d judge requests came while the group's first was unanswered", atOnce, early)
		}
	}
}

// TestMetricsCountCachedTokens: against a judge whose prefix cache reports
// the prompt tokens it reused, /metrics counts them apart from the other
// prompt tokens.
func TestMetricsCountCachedTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(_ *Config, s *sim.Config) { s.PrefixCache = sim.PrefixCache{On: true} })
	responses := []string{rewardtest.TwoSteps, rewardtest.MarkedResponse, "The answer is 5. <answer>5</answer>"}
	var g struct{ Results []reward.Result }
	h.post("/v1/score_group", mustJSON(t, map[string]any{"label": labelJSON(t, rewardtest.DemoLabel()), "responses": responses}), &g)
	_, m := h.do(http.MethodGet, "/metrics", "")
	var cached, prompt int64
	for _, line := range strings.Split(string(m), "\n") {
		switch {
		case strings.HasPrefix(line, `rewardd_judge_tokens_total{kind="cached_prompt"} `):
			fmt.Sscan(strings.Fields(line)[1], &cached)
		case strings.HasPrefix(line, `rewardd_judge_tokens_total{kind="prompt"} `):
			fmt.Sscan(strings.Fields(line)[1], &prompt)
		}
	}
	if cached <= 0 || cached >= prompt {
		t.Errorf("/metrics counts %d cached of %d prompt tokens; want some cached (the group's rubric):\n%s", cached, prompt, m)
	}
}

// TestScoreGroupAtOnceWhenTheJudgeCaches: once the judge's replies about a
// rubric have said that its prefix cache reused part of the prompt, the
// next group of that rubric is sent at once (the server caches, and has
// the rubric); a judge that never says so keeps getting each group's first
// request alone.
func TestScoreGroupAtOnceWhenTheJudgeCaches(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	for _, caches := range []bool{true, false} {
		var w *sim.WarmWatch
		h := newHarnessVia(t, nil, func(next http.RoundTripper) http.RoundTripper {
			w = &sim.WarmWatch{Next: next, Kind: sim.KindSatisfy, Group: func(msgs []sim.Message) string { return "the rubric" }}
			return w
		}, func(_ *Config, s *sim.Config) { s.PrefixCache = sim.PrefixCache{On: caches} })
		for g := range 2 {
			w.Reset()
			responses := make([]string, 4)
			for i := range responses {
				responses[i] = fmt.Sprintf("### Step 1: Add.\n2+3 = 5 (group %d, response %d).\n<answer>5</answer>", g, i)
			}
			var out struct{ Results []reward.Result }
			h.post("/v1/score_group", mustJSON(t, map[string]any{"label": labelJSON(t, lab), "responses": responses}), &out)
			early, _ := w.Early()
			if wantAtOnce := caches && g == 1; (early > 0) != wantAtOnce {
				t.Errorf("judge caches %v, group %d: %d requests came while the first was unanswered; want them at once: %v", caches, g, early, wantAtOnce)
			}
		}
	}
}

// TestGroundedGroupWarmsFirst: a grounded question's group is judged as a
// math group is: the first answer alone, the others once it is scored.
func TestGroundedGroupWarmsFirst(t *testing.T) {
	t.Parallel()
	labs := rewardtest.GroundedLabels(t)
	var w *sim.WarmWatch
	h := newHarnessVia(t, labs, func(next http.RoundTripper) http.RoundTripper {
		w = &sim.WarmWatch{Next: next, Kind: sim.KindScoreGrounded, Group: func([]sim.Message) string { return "the question" }}
		return w
	})
	answers := []string{"Log first, then pages.", "Replay from the checkpoint.", "Undo the rest.", "Nothing."}
	var out struct{ Results []reward.Result }
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": labs[0].ID, "responses": answers}), &out)
	if early, groups := w.Early(); early != 0 || groups != 1 {
		t.Errorf("%d scoring requests came while the group's first was unanswered", early)
	}
}
