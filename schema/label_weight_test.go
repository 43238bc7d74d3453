package schema

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseLabelBoundsWeights: a label whose weights are finite but so large
// that their sum overflows (1e308 + 1e308 = +Inf, and then Inf/Inf = NaN in
// every weighted formula) is refused when it is read, with the field named.
func TestParseLabelBoundsWeights(t *testing.T) {
	label := func(weights ...string) []byte {
		items := make([]string, len(weights))
		for i, w := range weights {
			items[i] = fmt.Sprintf(`{"id": %d, "type": "FACTUAL", "text": "States x = %d.", "weight": %s}`, i+1, i, w)
		}
		return []byte(`{"id": "p", "question": "q", "ground_truth": "1", "rubric": [` + strings.Join(items, ",") + `]}`)
	}
	for _, tc := range []struct {
		name    string
		weights []string
		field   string // "" when the label is good
	}{
		{"ordinary weights", []string{"1", "5", "2.5"}, ""},
		{"negative and zero weights", []string{"-3", "0", "1"}, ""},
		{"the largest weight allowed", []string{fmt.Sprint(MaxLabelWeight), fmt.Sprint(-MaxLabelWeight)}, ""},
		{"weights whose sum overflows", []string{"1e308", "1e308"}, "label.rubric[0].weight"},
		{"a huge negative weight", []string{"1", "-1.7e308"}, "label.rubric[1].weight"},
		{"just over the bound", []string{"1", "1", fmt.Sprint(MaxLabelWeight * 1.5)}, "label.rubric[2].weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLabel(label(tc.weights...))
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("ParseLabel: %v", err)
			case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field+":")):
				t.Fatalf("ParseLabel error %v, want one naming %s", err, tc.field)
			}
		})
	}
}
