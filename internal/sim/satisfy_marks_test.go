package sim

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

func TestSatisfyMarkers(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{})
	items := []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "Uses C(24,3)."},
		{ID: 2, Type: schema.TypePitfall, Text: "Orders the members."},
		{ID: 3, Type: schema.TypeBonus, Text: "Uses symmetry."},
		{ID: 4, Type: schema.TypeAnswer, Text: "The final answer is equivalent to 2024."},
	}
	sol := "Plan first. " + SatisfiedMarker(3) + "\n### Step 1: Count\nC(24,3) " + SatisfiedMarker(1) +
		"\n### Step 2: Answer\n" + SatisfiedMarker(2, 4) + "\n<answer>2024</answer>"
	want := []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 1}, {ID: 2, Satisfied: true, Step: 2},
		{ID: 3, Satisfied: true, Step: 0}, {ID: 4, Satisfied: true, Step: 2}}
	unmarked := "### Step 1: Count\n" + SatisfiedMarker(4) + "\n<answer>2024</answer>"
	wantUnmarked := []schema.Satisfaction{{ID: 1, Step: -1}, {ID: 2, Step: -1}, {ID: 3, Step: -1}, {ID: 4, Satisfied: true, Step: 1}}
	for _, tc := range []struct {
		name string
		sol  string
		want []schema.Satisfaction
	}{{"every item marked", sol, want}, {"items without a marker", unmarked, wantUnmarked}} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := ps.SatisfyMessages(sampleProblem, tc.sol, "2024", items)
			if err != nil {
				t.Fatal(err)
			}
			for seed := range int64(5) {
				content := complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content
				got, err := schema.ParseSatisfaction(content, itemIDs(items), 2)
				if err != nil {
					t.Fatalf("ParseSatisfaction: %v\n%s", err, content)
				}
				for i := range tc.want {
					if got[i] != tc.want[i] {
						t.Errorf("seed %d: item %d: got %+v, want %+v", seed, tc.want[i].ID, got[i], tc.want[i])
					}
				}
			}
		})
	}
	t.Run("judge fails", func(t *testing.T) {
		msgs, err := ps.SatisfyMessages(sampleProblem, "### Step 1: x\n"+JudgeFailsMarker, "", items)
		if err != nil {
			t.Fatal(err)
		}
		content := complete(t, s, seeded(msgs, 0, 1)).Choices[0].Message.Content
		if _, err := schema.ParseSatisfaction(content, itemIDs(items), 1); err == nil {
			t.Fatalf("a solution marked to fail got a usable reply: %s", content)
		}
		repair, err := ps.RepairMessages(msgs, content, &schema.ParseError{Msg: "no JSON array"})
		if err != nil {
			t.Fatal(err)
		}
		if again := complete(t, s, seeded(repair, 0, 1)).Choices[0].Message.Content; !strings.Contains(again, unusableReply) {
			t.Errorf("the repair turn got %q, want the unusable reply again", again)
		}
	})
}
