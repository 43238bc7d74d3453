package sim

import (
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// TestDecomposeAnswersTheTemplate: the rendered decompose template is
// recognized, and the reply parses as 2-3 finer items of the saturated
// item's type; with planted kinds the first two are aligned.
func TestDecomposeAnswersTheTemplate(t *testing.T) {
	t.Parallel()
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		plant *Plant
		typ   string
	}{
		{"plain suggest", nil, "SUGGEST"},
		{"planted suggest", &Plant{Misaligned: 0.3, Saturated: 0.2, Dead: 0.2}, "SUGGEST"},
		{"planted pitfall", &Plant{Misaligned: 0.3, Saturated: 0.2, Dead: 0.2}, "PITFALL"},
		{"factual", nil, "FACTUAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{cfg: Config{Plant: tc.plant, Seed: 7}}
			for k := range 20 {
				problem := "Find x if x + " + strings.Repeat("1", k+1) + " = 0."
				item := schema.Item{ID: 2, Type: tc.typ, Text: "Moves the constant to the other side.", Polarity: schema.PolarityOf(tc.typ)}
				msgs, err := ps.DecomposeMessages(problem, "-1", item, []prompts.Solution{{Index: 1, Correct: true, Text: "x = -1"}})
				if err != nil {
					t.Fatal(err)
				}
				lm := make([]Message, len(msgs))
				for i, m := range msgs {
					lm[i] = Message{Role: m.Role, Content: m.Content}
				}
				kind, prompt, _ := classify(lm)
				if kind != KindDecompose {
					t.Fatalf("classified as %s", kind)
				}
				items, err := schema.ParseDecomposed(s.decompose(prompt, newRNG(uint64(k)), false), tc.typ)
				if err != nil {
					t.Fatal(err)
				}
				for i, it := range items[:2] {
					if kind, ok := s.PlantedKind(problem, it.Type, it.Text); ok && kind != PlantedAligned {
						t.Errorf("problem %d item %d %q planted %s, want aligned", k, i, it.Text, kind)
					}
				}
				if _, err := schema.ParseDecomposed(s.decompose(prompt, newRNG(uint64(k)), true), tc.typ); err == nil {
					t.Error("a malformed reply parsed")
				}
			}
		})
	}
}
