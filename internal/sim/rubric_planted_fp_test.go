package sim

import (
	"fmt"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestPlantedFactualProcessRubricAlwaysAnswered: with planting on, every
// factual_process distill request is answered with a rubric that parses,
// within the style's 10 items, whatever the draw of its size (up to 9
// drawn items, of which 8 may be PROCESS items, more than the 7 process
// lines the simulator writes from).
func TestPlantedFactualProcessRubricAlwaysAnswered(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{Plant: testPlant(), Seed: 11})
	for i := range 64 {
		msgs, err := ps.DistillFactualProcessMessages(fmt.Sprintf("Question %d: what is 3 + %d?", i, i), "Add.", fmt.Sprint(3+i))
		if err != nil {
			t.Fatal(err)
		}
		content := complete(t, s, seeded(msgs, int64(i), 1)).Choices[0].Message.Content
		items, err := schema.ParseFactualProcess(content)
		if err != nil {
			t.Fatalf("question %d: ParseFactualProcess: %v\n%s", i, err, content)
		}
		if len(items) < 3 || len(items) > 10 {
			t.Errorf("question %d: %d items, want 3 to 10", i, len(items))
		}
	}
}
