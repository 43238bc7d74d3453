package sim

import (
	"regexp"
	"testing"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// TestSatisfyNamesStepsAsShown: the simulated judge names the step a marker
// is in by what the prompt shows it, as a model would: the <step n="K"> tag
// around it when the satisfy template tags steps, else the number the
// student wrote in the header above it (with the template of old, or an
// override without tags). It never counts headers itself.
func TestSatisfyNamesStepsAsShown(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{})
	items := []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "Counts the subsets."},
		{ID: 2, Type: schema.TypePitfall, Text: "Orders the members."},
		{ID: 3, Type: schema.TypeAnswer, Text: "The final answer is equivalent to 2024."},
	}
	sol := "### Step 0: Read\n" + SatisfiedMarker(1) + "\n### Step 3: Count\n" + SatisfiedMarker(2) +
		"\n### Step 3: Count again\n" + SatisfiedMarker(3) + "\n<answer>2024</answer>"
	msgs, err := ps.SatisfyMessages(sampleProblem, sol, "2024", items)
	if err != nil {
		t.Fatal(err)
	}
	untagged := make([]prompts.Message, len(msgs))
	copy(untagged, msgs)
	tag := regexp.MustCompile(`(?m)^(<step n="\d+">|</step>)\n?`)
	untagged[len(untagged)-1].Content = tag.ReplaceAllString(untagged[len(untagged)-1].Content, "")
	for _, tc := range []struct {
		name  string
		msgs  []prompts.Message
		steps []int32 // of items 1, 2, 3
	}{
		{"the prompt tags the steps", msgs, []int32{1, 2, 3}},
		{"the prompt shows the headers only", untagged, []int32{0, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := complete(t, s, seeded(tc.msgs, 1, 1)).Choices[0].Message.Content
			got, err := schema.ParseSatisfaction(content, itemIDs(items), 0)
			if err != nil {
				t.Fatalf("ParseSatisfaction: %v\n%s", err, content)
			}
			for i, v := range got {
				if !v.Satisfied || v.Step != tc.steps[i] {
					t.Errorf("item %d: %+v, want satisfied at step %d", v.ID, v, tc.steps[i])
				}
			}
		})
	}
}
