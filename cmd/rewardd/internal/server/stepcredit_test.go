package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
)

// writtenStep is one step of a test response: the header as the policy
// wrote it and the items the simulated judge is to find satisfied in it.
type writtenStep struct {
	header string
	ids    []int32
}

// TestStepCreditLandsOnTheNamedStep scores responses whose "### Step N:"
// headers are numbered from 0, with gaps and starting over, with a judge
// that names steps the way the satisfy prompt tells a model to (the
// simulated judge reads the prompt's text, it does not count spans). Every
// item's delta must land on the span of the step the item was satisfied in,
// and the item's step must be that span's.
func TestStepCreditLandsOnTheNamedStep(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel() // 1, 2 SUGGEST (0.4 each), 3 PITFALL (-1), 4 BONUS (1), 5 ANSWER (0)
	delta := map[int32]float64{1: 0.4, 2: 0.4, 3: -1, 4: 1, 5: 0}
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name  string
		steps []writtenStep
	}{
		{"numbered from 0", []writtenStep{{"### Step 0: Read.", []int32{1}}, {"### Step 1: Add.", []int32{2, 3}}, {"### Step 2: Check.", []int32{4, 5}}}},
		{"numbers skipped", []writtenStep{{"### Step 1: Read.", []int32{1}}, {"### Step 3: Add.", []int32{2}}, {"### Step 7: Check.", []int32{3, 4, 5}}}},
		{"numbering starts over", []writtenStep{{"### Step 1: Try.", []int32{3}}, {"### Step 2: Doubt.", nil},
			{"### Step 1: Again.", []int32{1, 2}}, {"### Step 2: Check.", []int32{4, 5}}}},
		{"a step numbered twice in a row", []writtenStep{{"### Step 1: Add.", []int32{1}}, {"### Step 1: Add again.", []int32{2}}, {"### Step 2: Done.", []int32{4, 5}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			wantStep := map[int32]int32{}
			wantDelta := make([]float64, len(tc.steps))
			for k, s := range tc.steps {
				fmt.Fprintf(&b, "%s\nSome work on 2+3.", s.header)
				if len(s.ids) > 0 {
					b.WriteString(" " + sim.SatisfiedMarker(s.ids...))
				}
				b.WriteString("\n")
				for _, id := range s.ids {
					wantStep[id] = int32(k + 1)
					wantDelta[k] += delta[id]
				}
			}
			b.WriteString("<answer>5</answer>")
			var got struct{ Results []reward.Result }
			h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"label": labelJSON(t, lab), "response": b.String()}}}), &got)
			res := got.Results[0]
			if !res.JudgeOK || res.Error != "" {
				t.Fatalf("judge_ok %v, error %q, judge_error %q", res.JudgeOK, res.Error, res.JudgeError)
			}
			if len(res.Steps) != len(tc.steps) {
				t.Fatalf("%d step spans, want %d", len(res.Steps), len(tc.steps))
			}
			for k, s := range res.Steps {
				if s.Step != int32(k+1) || !rewardtest.Near(s.Delta, wantDelta[k]) {
					t.Errorf("span %d (%q): step %d, delta %v; want step %d, delta %v", k, tc.steps[k].header, s.Step, s.Delta, k+1, wantDelta[k])
				}
			}
			for _, it := range res.Items {
				want, ok := wantStep[it.ID]
				if !ok {
					want = -1
				}
				if it.Step != want || it.Satisfied != ok {
					t.Errorf("item %d: satisfied %v at step %d; want satisfied %v at step %d", it.ID, it.Satisfied, it.Step, ok, want)
				}
			}
		})
	}
}
