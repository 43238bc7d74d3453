package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func groundedFixture() Record {
	return Record{
		ID: "abcdef0123456789", Source: "docs", Split: "train", Style: StyleGrounded, Rubric: []Item{}, Rollouts: []Rollout{},
		Grounded: &Grounded{
			DocID: "a.md", PassageID: "a.md#0", Title: "A", Passage: "The passage text.", DocHash: "0000111122223333",
			Questions: []GroundedQuestion{
				{Index: 0, Question: "Q zero?", Criteria: []Criterion{{ID: "c1", Weight: 2, Name: "n"}, {ID: "c2", Weight: 1}}},
				{Index: 1, Question: "Q one?", Criteria: []Criterion{{ID: "c1", Weight: 3}}},
			},
		},
	}
}

func TestQuestionLabels(t *testing.T) {
	rec := groundedFixture()
	labs := QuestionLabels(&rec)
	if len(labs) != 2 {
		t.Fatalf("%d labels, want 2", len(labs))
	}
	l := labs[1]
	if l.ID != "abcdef0123456789-q1" || l.Question != "Q one?" || l.Scheme != SchemeGrounded || l.Style != StyleGrounded ||
		l.Grounded.Passage != "The passage text." || len(l.Grounded.Criteria) != 1 || l.GroundTruth != "" || l.Rubric == nil {
		t.Errorf("label %+v", l)
	}
	raw, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseLabel(raw)
	if err != nil {
		t.Fatalf("a grounded question's label does not parse back: %v\n%s", err, raw)
	}
	if back.Grounded == nil || back.Grounded.Criteria[0].Weight != 3 || back.ID != l.ID {
		t.Errorf("round trip: %+v", back)
	}
	if DefaultScheme(StyleGrounded) != SchemeGrounded {
		t.Errorf("DefaultScheme(grounded) = %q", DefaultScheme(StyleGrounded))
	}
}

// TestMathLabelUnchanged: a math label's JSON has no grounded key.
func TestMathLabelUnchanged(t *testing.T) {
	rec := Record{ID: "p", Style: StyleSRaR, Problem: "1+1?", Answer: "2", Rubric: []Item{{ID: 1, Type: TypeAnswer, Text: "says 2", Weight: 1, Polarity: 1}}}
	raw, _ := json.Marshal(LabelOf(&rec))
	if strings.Contains(string(raw), "grounded") {
		t.Errorf("math label JSON mentions grounded: %s", raw)
	}
}

func TestParseGroundedLabelErrors(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"id": "x-q0", "style": "grounded", "scheme": "grounded", "question": "Why?", "rubric": []any{},
			"grounded": map[string]any{"passage": "text", "criteria": []any{
				map[string]any{"id": "c1", "weight": 2}, map[string]any{"id": "c2", "weight": 1},
			}},
		}
	}
	crit := func(m map[string]any) []any { return m["grounded"].(map[string]any)["criteria"].([]any) }
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		want   string
	}{
		{"fine", func(map[string]any) {}, ""},
		{"no scheme is grounded", func(m map[string]any) { delete(m, "scheme") }, ""},
		{"no passage", func(m map[string]any) { m["grounded"].(map[string]any)["passage"] = " " }, "label.grounded.passage: empty"},
		{"no grounded", func(m map[string]any) { delete(m, "grounded") }, "label.grounded: missing"},
		{"math scheme", func(m map[string]any) { m["scheme"] = "srar" }, `label.scheme: "srar"; a grounded question is scored only under "grounded"`},
		{"rubric items", func(m map[string]any) { m["rubric"] = []any{map[string]any{"id": 1, "type": "ANSWER", "text": "t"}} }, "label.rubric: 1 items"},
		{"repeated id", func(m map[string]any) { crit(m)[1].(map[string]any)["id"] = "c1" }, `label.grounded.criteria[1].id: "c1" appears twice`},
		{"negative weight", func(m map[string]any) { crit(m)[0].(map[string]any)["weight"] = -1 }, "label.grounded.criteria[0].weight: -1 is out of range: a criterion's weight must be a number from 0 to 1e+06"},
		{"huge weight", func(m map[string]any) { crit(m)[0].(map[string]any)["weight"] = 1e300 }, "label.grounded.criteria[0].weight: 1e+300 is out of range"},
		{"zero total", func(m map[string]any) {
			crit(m)[0].(map[string]any)["weight"] = 0
			crit(m)[1].(map[string]any)["weight"] = 0
		}, "label.grounded.criteria: total weight 0"},
		{"no question", func(m map[string]any) { m["question"] = "" }, "label.question: empty"},
		{"grounded payload on a math style", func(m map[string]any) { m["style"] = "srar" }, `label.style: "srar" with a grounded payload`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			tc.change(m)
			raw, _ := json.Marshal(m)
			l, err := ParseLabel(raw)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want == "" && l.Scheme != SchemeGrounded:
				t.Errorf("scheme %q, want grounded", l.Scheme)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
