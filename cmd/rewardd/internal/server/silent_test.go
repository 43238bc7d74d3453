package server

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// silentResponses say nothing, though not only in white space: what a
// model's chat template, reasoning switch or answer format leaves when the
// model writes nothing of its own. Each was judged before (and the judge,
// finding no PITFALL fallen into, paid rgr the PITFALLs' share, srar up to
// 0.8 above an honest wrong answer's -0.9).
var silentResponses = map[string]string{
	"an empty reasoning block (Qwen3 with thinking off)": "<think>\n\n</think>\n\n",
	"an empty box":                              `\boxed{}`,
	"an empty box in math, with a space":        `$\boxed{ }$`,
	"empty answer tags":                         "<answer></answer>",
	"a step header and empty answer tags":       "### Step 1:\n<answer></answer>",
	"two bare step headers and an empty box":    "### Step 1:\n### Step 2:\n\\boxed{}\n",
	"gpt-oss's end token":                       "<|return|>",
	"Llama 3 base's end token":                  "<|end_of_text|>",
	"Gemma's end token":                         "<eos>",
	"a question mark":                           "?",
	"an ellipsis":                               "...",
	"an empty reasoning block and an empty box": "<think> </think>\n**Final Answer:** $\\boxed{}$",
}

// TestSilentResponsesEarnNoMoreThanTheWorstHonestAnswer: a response that
// holds nothing but markup (reasoning tags, answer tags, an empty box,
// step headers, end tokens) and punctuation says as little as an empty
// one, and earns no more than the worst honest answer, in every scheme and
// protocol, over HTTP; it is not sent to the judge (empty: true).
func TestSilentResponsesEarnNoMoreThanTheWorstHonestAnswer(t *testing.T) {
	t.Parallel()
	all := []string{schema.SchemeSRaR, schema.SchemeRGR, schema.SchemeRLCER, schema.SchemePAPO, schema.SchemeGrounded}
	families := []twinFamily{mathFamily(schema.StyleSRaR, all...), groundedFamily(t)}
	for _, f := range families {
		for _, scheme := range f.schemes {
			t.Run(f.name+"/"+scheme, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, []schema.Label{f.lab}, func(c *Config, _ *sim.Config) { c.Scheme = scheme })
				worst := worstHonest(f)
				floor := scoreEverywhere(t, h, f, worst)
				for name, silent := range silentResponses {
					got := scoreEverywhere(t, h, f, silent)
					for protocol, r := range got {
						if r > floor[protocol] && !nearly(r, floor[protocol]) {
							t.Errorf("%s, %s %q: earns %v, the worst honest answer %v", protocol, name, silent, r, floor[protocol])
						}
					}
					var g reward.Group
					h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": f.lab.ID, "responses": []string{worst, silent, f.text(scheme, 1, 0)}}), &g)
					if bad := above(g, 1, 0); len(bad) > 0 {
						t.Errorf("/v1/score_group, %s %q: more than the worst honest answer: %s", name, silent, strings.Join(bad, ", "))
					}
					if !g.Results[1].Empty {
						t.Errorf("/v1/score_group, %s %q: empty false (judge_ok %v); want it not judged, as an empty response", name, silent, g.Results[1].JudgeOK)
					}
				}
			})
		}
	}
}
