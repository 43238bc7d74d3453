package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// worstHonest is a response to f's rubric that tries and does as badly as
// a judged response can: a wrong answer that falls into every PITFALL and
// meets nothing else (a grounded question: every criterion scored 0).
func worstHonest(f twinFamily) string {
	if f.lab.Grounded != nil {
		return "Pages first, then the log. " + sim.ScoresMarker(map[string]float64{}, "order", "replay", "undo")
	}
	var pits []int32
	for _, it := range f.lab.Rubric {
		if reward.Polarity(it) < 0 {
			pits = append(pits, it.ID)
		}
	}
	return "### Step 1: Add.\n2+3 = 6. " + sim.SatisfiedMarker(pits...) + "\n### Step 2: Check.\n6-3 = 3. " + sim.SatisfiedMarker() + "\n<answer>6</answer>"
}

// TestSilenceEarnsNoMoreThanTheWorstHonestAnswer: an empty response (or
// one of white space only) earns no more than the worst honest one, in
// every scheme and protocol, over HTTP: its reward in /v1/score, slime's
// /score, OpenRLHF's /get_reward, NeMo Gym's /verify (also with no
// assistant text at all) and the ORS answer tool, and its reward and every
// advantage term in /v1/score_group beside it. An ORS episode with no
// valid answer call gets no reward (a trainer counts 0), so the ORS reward
// of the worst honest answer is not below 0 either.
func TestSilenceEarnsNoMoreThanTheWorstHonestAnswer(t *testing.T) {
	t.Parallel()
	all := []string{schema.SchemeSRaR, schema.SchemeRGR, schema.SchemeRLCER, schema.SchemePAPO, schema.SchemeGrounded}
	families := []twinFamily{mathFamily(schema.StyleSRaR, all...), mathFamily(schema.StyleFactualProcess, schema.SchemeRGR), groundedFamily(t)}
	for _, f := range families {
		for _, scheme := range f.schemes {
			t.Run(f.name+"/"+scheme, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, []schema.Label{f.lab}, func(c *Config, _ *sim.Config) { c.Scheme = scheme })
				worst := worstHonest(f)
				floor := scoreEverywhere(t, h, f, worst)
				for name, r := range floor {
					if name == "ors" && r < 0 {
						t.Errorf("the worst honest answer's ORS reward %v is below a missing answer call's 0", r)
					}
				}
				for _, empty := range []string{"", " \n\t "} {
					got := scoreEverywhere(t, h, f, empty)
					for name, r := range got {
						if r > floor[name] && !nearly(r, floor[name]) {
							t.Errorf("%s: the empty response %q earns %v, the worst honest one %v", name, empty, r, floor[name])
						}
					}
					var g reward.Group
					h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": f.lab.ID, "responses": []string{worst, empty, f.text(scheme, 1, 0)}}), &g)
					if bad := above(g, 1, 0); len(bad) > 0 {
						t.Errorf("/v1/score_group: the empty response %q gets more than the worst honest one: %s", empty, strings.Join(bad, ", "))
					}
				}
			})
		}
	}
}

func nearly(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// scoreEverywhere is the reward of response through each protocol, by
// protocol name.
func scoreEverywhere(t *testing.T, h *harness, f twinFamily, response string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	var one scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": f.lab.ID, "response": response}}}), &one)
	out["/v1/score"] = one.Results[0].Reward
	var slime reward.Result
	h.post("/score", mustJSON(t, map[string]any{"prompt": f.lab.Question, "response": response, "label": labelJSON(t, f.lab)}), &slime)
	out["/score"] = slime.Reward
	var rl getRewardAnswer
	prompt := "<|im_start|>user\n" + f.lab.Question + "<|im_end|>\n<|im_start|>assistant\n"
	h.post("/get_reward", mustJSON(t, map[string]any{"query": []string{prompt + response}, "prompts": []string{prompt}, "labels": []string{labelJSON(t, f.lab)}}), &rl)
	out["/get_reward"] = rl.Rewards[0]
	var v struct {
		Reward     float64 `json:"reward"`
		MaskSample bool    `json:"mask_sample"`
	}
	h.post("/verify", verifyBody(t, response, map[string]any{"problem_id": f.lab.ID}), &v)
	out["/verify"] = v.Reward
	if v.MaskSample {
		t.Errorf("/verify masks the sample of response %q: the policy's own output, not a failed judgment", response)
	}
	if strings.TrimSpace(response) == "" {
		noText := strings.Replace(verifyBody(t, response, map[string]any{"problem_id": f.lab.ID}), `"type":"message"`, `"type":"function_call"`, 1)
		if code, body := h.do(http.MethodPost, "/verify", noText); code != http.StatusOK || json.Unmarshal(body, &v) != nil {
			t.Errorf("/verify of a response without assistant text: %d %s; want it paid as an empty one", code, body)
		} else {
			out["/verify without assistant text"] = v.Reward
		}
	}
	e := openEpisode(t, orsDo(h.do), map[string]any{"split": "train", "index": 0})
	ok, ors, msg := e.answer(response)
	if !ok || ors.Reward == nil {
		t.Fatalf("ORS answer %q: ok %v, %s", response, ok, msg)
	}
	out["ors"] = *ors.Reward
	return out
}
