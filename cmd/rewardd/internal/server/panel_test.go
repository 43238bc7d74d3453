package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// newPanelHarness is a Server judged by a panel of simulated judges, one
// per model: "truth" judges without errors, "contrary" says the opposite
// of every verdict, "broken" never answers usably.
func newPanelHarness(t testing.TB, labels []schema.Label, models ...string) *harness {
	t.Helper()
	simulator := sim.New(sim.Config{Judges: map[string]sim.JudgeProfile{"contrary": {Flip: 1}, "broken": {Fail: 1}}})
	meter := llm.NewMeter(nil, llm.Budget{})
	members := make([]*judge.Judge, len(models))
	for i, m := range models {
		members[i] = newTestJudge(t, simulator.Transport(), 1, meter, judge.Options{Model: m, Name: m + "-" + string(rune('a'+i)), Repairs: -1})
	}
	p, err := judge.NewPanel(members)
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	cfg := Config{Judge: p, Meter: meter, Logger: slog.New(slog.NewTextHandler(logs, nil)), Prompts: rewardtest.Prompts(t)}
	cfg.Index, _ = NewIndex(labels)
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, simulator: simulator, judge: p, logs: logs, labels: labels}
}

// wrongResponse is an incorrect response whose simulated verdicts are:
// item 3 (the PITFALL) satisfied at step 1, the others not.
var wrongResponse = "### Step 1: Guess.\n2+3 = 6. " + sim.SatisfiedMarker(3) + "\n<answer>6</answer>"

// TestPanelScoring: over HTTP, a panel whose judges split 1-1 with one
// failed pays each response what the failure floor pays (every item
// against it) with judge_ok true, never more than the truth pays, in
// /v1/score and /v1/score_group alike; a panel whose judges all failed is
// a judge failure (judge_ok false, the floor); /metrics counts each
// judge's calls and failures.
func TestPanelScoring(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	// Marked responses: the simulated "contrary" judge says the opposite of
	// "truth" on every item of them.
	partial := "### Step 1: Add.\n2+3 = 5. " + sim.SatisfiedMarker(2, 3) + "\n<answer>5</answer>"
	responses := []string{rewardtest.MarkedResponse, wrongResponse, partial}
	score := func(h *harness) []reward.Result {
		items := make([]map[string]any, len(responses))
		for i, r := range responses {
			items[i] = map[string]any{"problem_id": lab.ID, "response": r, "scheme": "srar"}
		}
		var ans scoreAnswer
		h.post("/v1/score", mustJSON(t, map[string]any{"items": items}), &ans)
		return ans.Results
	}
	group := func(h *harness) reward.Group {
		var g reward.Group
		h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": lab.ID, "scheme": "srar", "responses": responses}), &g)
		return g
	}
	split := newPanelHarness(t, []schema.Label{lab}, "truth", "contrary", "broken")
	truth := newPanelHarness(t, []schema.Label{lab}, "truth", "truth")
	down := newPanelHarness(t, []schema.Label{lab}, "broken", "broken")
	got, honest, floor := score(split), score(truth), score(down)
	for i := range responses {
		g, h, f := got[i], honest[i], floor[i]
		if !g.JudgeOK || g.Error != "" || !h.JudgeOK {
			t.Fatalf("response %d: split panel judge_ok %v error %q; truth judge_ok %v", i, g.JudgeOK, g.Error, h.JudgeOK)
		}
		if f.JudgeOK || !strings.Contains(f.JudgeError, "every judge of the panel failed") {
			t.Errorf("response %d: every judge failed, yet judge_ok %v (%q)", i, f.JudgeOK, f.JudgeError)
		}
		if g.Reward > h.Reward || !rewardtest.Near(g.Reward, f.Reward) {
			t.Errorf("response %d: a split panel with a failed judge pays %v; the truth pays %v, the floor %v", i, g.Reward, h.Reward, f.Reward)
		}
		for k, it := range g.Items {
			if it.Satisfied != (reward.Polarity(lab.Rubric[k]) < 0) {
				t.Errorf("response %d item %d: satisfied %v, want the verdict against the response", i, it.ID, it.Satisfied)
			}
		}
	}
	gs, gt := group(split), group(truth)
	for i := range responses {
		if !gs.Results[i].JudgeOK || gs.Results[i].Reward > gt.Results[i].Reward || !rewardtest.Near(gs.Results[i].Reward, floor[i].Reward) {
			t.Errorf("group response %d: split panel pays %v (judge_ok %v), truth %v, floor %v", i, gs.Results[i].Reward, gs.Results[i].JudgeOK, gt.Results[i].Reward, floor[i].Reward)
		}
	}
	code, metrics := split.do(http.MethodGet, "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	for _, line := range []string{
		// /v1/score asked each judge about 3 responses; /v1/score_group's
		// came from memory, but for the broken judge's, asked again.
		`rewardd_panel_judge_calls_total{judge="truth-a"} 3`,
		`rewardd_panel_judge_calls_total{judge="broken-c"} 6`,
		`rewardd_panel_judge_failures_total{judge="truth-a"} 0`,
		`rewardd_panel_judge_failures_total{judge="contrary-b"} 0`,
		`rewardd_panel_judge_failures_total{judge="broken-c"} 6`,
		`rewardd_panel_judge_cache_hits_total{judge="truth-a",cache="memory"} 3`,
		"rewardd_judge_calls_total 6",
		"rewardd_judge_failures_total 0",
	} {
		if !strings.Contains(string(metrics), line+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", line, grepLines(string(metrics), "judge"))
		}
	}
}

func grepLines(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
