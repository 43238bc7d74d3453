package reward

import (
	"fmt"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// boxedTwoSteps is a correct two-step response that ends on a boxed answer:
// what a rollout cut off at the token limit just after its box looks like.
const boxedTwoSteps = "### Step 1: Add.\n2+3 = 5.\n### Step 2: Check.\n5-3 = 2, so the sum is \\boxed{5}"

// TestAnalyzeFinished: a finish reason that says the response was cut off
// takes no answer from it, whatever it ends with; "stop" or none reads it
// as today, and "stop" never reads a response as cut off.
func TestAnalyzeFinished(t *testing.T) {
	midSentence := "### Step 1: Add.\n2+3 = 5.\n### Step 2: State the sum\nThe sum is 5"
	cases := []struct {
		name, response, finish string
		extracted, cutOff      string
		correct                bool
	}{
		{"boxed, cut at the token limit", boxedTwoSteps, "length", "", "finish_reason length", false},
		{"boxed, cut by the content filter", boxedTwoSteps, "content_filter", "", "finish_reason content_filter", false},
		{"answer tag, cut at the token limit", rewardtest.TwoSteps, "length", "", "finish_reason length", false},
		{"boxed, stopped", boxedTwoSteps, "stop", "5", "", true},
		{"boxed, no finish reason", boxedTwoSteps, "", "5", "", true},
		{"mid-sentence, stopped", midSentence, "stop", "5", "", true},
		{"mid-sentence, no finish reason", midSentence, "", "5", "", true},
	}
	for _, c := range cases {
		r := AnalyzeFinished(c.response, "5", c.finish)
		if r.Extracted != c.extracted || r.Correct != c.correct || r.CutOff != c.cutOff {
			t.Errorf("%s: extracted %q, correct %v, cut off %q; want %q, %v, %q", c.name, r.Extracted, r.Correct, r.CutOff, c.extracted, c.correct, c.cutOff)
		}
		if a := Analyze(c.response, "5"); c.finish == "" && (a.Extracted != r.Extracted || a.Correct != r.Correct || a.CutOff != "") {
			t.Errorf("%s: Analyze differs from AnalyzeFinished without a finish reason: %+v", c.name, a)
		}
	}
}

// TestCutOffGetsNoMoreThanItsFinishedTwin: in a group that holds the same
// text twice with the same verdicts, once with finish_reason "stop" and once
// with "length", the cut-off one gets, under every scheme, on every term and
// step a trainer reads (reward, score, outcome, process, total, step offsets,
// step advantages, step deltas, metrics), no more than its finished twin; its result
// says it was cut off and is not correct.
func TestCutOffGetsNoMoreThanItsFinishedTwin(t *testing.T) {
	p := DefaultParams()
	items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypePitfall, 1), rewardtest.Item(3, schema.TypeBonus, 1), rewardtest.Item(4, schema.TypeSuggest, 2)}
	lab := rewardtest.Label(items)
	v := func(mask int) []schema.Satisfaction {
		out := make([]schema.Satisfaction, len(items))
		for j, it := range items {
			out[j] = rewardtest.Sat(it.ID, mask&(1<<j) != 0, int32(1+j%2))
		}
		return out
	}
	type member struct {
		text, finish string
		mask         int
	}
	twin := func(text string, mask int) []member { return []member{{text, "stop", mask}, {text, "length", mask}} }
	groups := map[string][]member{
		"a weak boxed twin among strong correct ones": append(twin(boxedTwoSteps, 0b0010),
			member{rewardtest.TwoSteps, "stop", 0b1101}, member{rewardtest.TwoSteps, "stop", 0b1101}, member{rewardtest.TwoSteps, "", 0b1101},
			member{wrongTwoSteps, "stop", 0}, member{wrongTwoSteps, "stop", 0b0001}, member{wrongTwoSteps, "", 0b0010}, member{wrongTwoSteps, "stop", 0}),
		"a strong twin":         append(twin(rewardtest.TwoSteps, 0b1101), member{wrongTwoSteps, "stop", 0b0010}, member{correctOneStep, "", 0b0001}),
		"only the twins":        twin(boxedTwoSteps, 0b0101),
		"a wrong twin":          append(twin(wrongTwoSteps, 0b0001), member{rewardtest.TwoSteps, "stop", 0b0011}),
		"two twins, one failed": append(twin(boxedTwoSteps, 0b1001), append(twin(rewardtest.TwoSteps, -1), member{wrongTwoSteps, "", 0b0100})...),
	}
	schemes := []string{schema.SchemeSRaR, schema.SchemeRGR, schema.SchemeGrounded, schema.SchemeRLCER, schema.SchemePAPO}
	for gname, members := range groups {
		rs := make([]Rollout, len(members))
		for i, m := range members {
			rs[i] = AnalyzeFinished(m.text, lab.GroundTruth, m.finish)
			if m.mask >= 0 {
				rs[i].Verdicts = v(m.mask)
			} else {
				rs[i].JudgeErr = "the judge failed"
			}
		}
		for _, scheme := range schemes {
			g := ScoreGroup(p, scheme, lab, rs)
			for i := 0; i+1 < len(members) && members[i+1].finish == "length"; i += 2 {
				cut, done := i+1, i
				if r := g.Results[cut]; r.Correct || r.CutOff != "finish_reason length" || g.Results[done].CutOff != "" {
					t.Errorf("%s, %s: cut off rollout: correct %v, cut_off %q; its twin's cut_off %q", gname, scheme, r.Correct, r.CutOff, g.Results[done].CutOff)
				}
				ceiling := newCeiling(g.Results[done], g.Advantages[done])
				bad := ceiling.above(g.Results[cut], g.Advantages[cut])
				if g.Results[cut].Score > g.Results[done].Score && !rewardtest.Near(g.Results[cut].Score, g.Results[done].Score) {
					bad = append(bad, fmt.Sprintf("score %.4g > %.4g", g.Results[cut].Score, g.Results[done].Score))
				}
				for k, m := range g.Results[cut].Metrics {
					if twin := g.Results[done].Metrics[k]; m > twin && !rewardtest.Near(m, twin) {
						bad = append(bad, fmt.Sprintf("metrics.%s %.4g > %.4g", k, m, twin))
					}
				}
				if len(bad) > 0 {
					t.Errorf("%s, %s: the cut-off rollout %d gets more than its finished twin: %v", gname, scheme, cut, bad)
				}
			}
		}
	}
}
