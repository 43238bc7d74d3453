package server

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroupAppendJSON: the group encoder writes what json.Encoder does, for
// every scheme, failed judges, an empty response, error results and strings
// that need escaping;
// it gives way to encoding/json where that one refuses or escapes a key.
func TestGroupAppendJSON(t *testing.T) {
	t.Parallel()
	items := rewardtest.BenchRubric()
	lab := rewardtest.Label(items)
	rs := rewardtest.BenchGroup(16, items, judged)
	rs[3].Verdicts, rs[3].JudgeErr = nil, "satisfaction judge: <timeout> & \"more\"\n"
	rs[5] = reward.Analyze(" \n", "5") // empty: not judged, the floor
	rs[5].Verdicts = nil
	odd := []string{"", "plain", "<&>", "é\u2028\u2029", "\x00\x1f\t\\\"", "\xff\xfe", "a\u007fb"}
	var groups []groupJSON
	for _, scheme := range schema.Schemes {
		g := reward.ScoreGroup(reward.DefaultParams(), scheme, lab, rs)
		for i := range g.Results {
			g.Results[i].RequestID = odd[i%len(odd)]
		}
		groups = append(groups, groupJSON{Group: g})
	}
	for _, s := range odd {
		r := reward.ErrorResult(s, s, schema.SchemeRGR, s)
		groups = append(groups, groupJSON{Group: reward.Group{Results: []reward.Result{r}, Advantages: []reward.Advantage{{Steps: []reward.StepAdvantage{}}},
			Validity: []reward.ItemGroupValidity{}}, Error: s})
	}
	groups = append(groups, groupJSON{}, groupJSON{Group: reward.Group{Results: []reward.Result{{Steps: []reward.StepResult{{Delta: 1e-9}}}},
		Validity: []reward.ItemGroupValidity{{ID: 1}}}})
	loops := groups[0]
	loops.Results = append([]reward.Result(nil), loops.Results...)
	loops.Results[0].RubricVersion, loops.Results[1].OffPolicy = 7, true
	corr := 0.5
	loops.Rubricator = []reward.RubricatorResult{{FormatOK: true, K: 1, KValid: 1, Reward: 2, Items: []reward.RubricatorItem{{ID: 11, Criterion: "x <y> & z", Points: -2, Corr: &corr, Valid: true}}},
		{Items: []reward.RubricatorItem{}, Error: "prose"}}
	loops.Guidance = &guidanceJSON{Needed: true, Best: 2, Failed: []int32{1, 3}, Prompt: []prompts.Message{{Role: "user", Content: "<problem>"}}}
	groups = append(groups, loops)
	for i, g := range groups {
		got, ok := g.appendJSON([]byte("kept"))
		if !ok {
			t.Fatalf("group %d: not encoded", i)
		}
		if want := encodingJSON(t, g); !bytes.Equal(got, append([]byte("kept"), want...)) {
			t.Fatalf("group %d:\n got %s\nwant %s", i, got, want)
		}
	}

	refused := groups[0]
	refused.Results = append([]reward.Result(nil), refused.Results...)
	refused.Results[1].Reward = math.NaN()
	escaped := groups[1]
	escaped.Results = append([]reward.Result(nil), escaped.Results...)
	escaped.Results[2].Metrics = reward.Values{"a<b": 1}
	for _, g := range []groupJSON{refused, escaped} {
		if _, ok := g.appendJSON(nil); ok {
			t.Fatalf("encoded a group encoding/json should: %+v", g.Results[:3])
		}
	}
}

func encodingJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
