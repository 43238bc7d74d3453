package schema

import (
	"strings"
	"testing"
)

// paperRubricator is an output in the shape of the RLCER paper's case study
// (our own criteria): five criteria, max 9, min -6, current 1 < 1.5.
const paperRubricator = `{
  "question_domain": "math/digit-sequence-analysis",
  "rubrics": [
    {"category": "Effectiveness of Problem Decomposition & Planning", "criterion": "Lists the digit sets before counting", "points": 3},
    {"category": "Reasoning Clarity & Flow", "criterion": "Gives each set its own count with a reason", "points": 3},
    {"category": "Reasoning Focus & Efficiency", "criterion": "Skips sets that cannot reach the range", "points": 3},
    {"category": "Effectiveness of BackTracking, Self-Validation & Error Handling", "criterion": "Never checks leading zeros", "points": -4},
    {"category": "Other Question-Specific Aspects", "criterion": "Lists permutations by hand instead of counting them", "points": -2}
  ],
  "maximum_score": 9,
  "minimum_score": -6,
  "current_score": 1
}`

func TestParseRubricator(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		err        string // "" for a parse
		problems   []string
	}{
		{name: "the paper's shape", text: paperRubricator},
		{name: "in a json fence", text: "```json\n" + paperRubricator + "\n```"},
		{name: "after reasoning", text: "<think>The response misses leading zeros {\"a\": 1}.</think>\n" + paperRubricator},
		{name: "prose", text: "The rubric should reward careful counting.", err: "not a JSON object"},
		{name: "an object inside prose", text: "Here is my rubric: " + paperRubricator, err: "not a JSON object"},
		{name: "prose after the object", text: paperRubricator + "\nI hope this helps.", err: "text after"},
		{name: "two objects", text: paperRubricator + paperRubricator, err: "text after"},
		{name: "cut off", text: paperRubricator[:200], err: "not one valid JSON object"},
		{name: "points as text", text: strings.Replace(paperRubricator, `"points": 3}`, `"points": "3"}`, 1), err: "points: expected a number"},
		{name: "no current_score", text: strings.Replace(paperRubricator, `"current_score": 1`, `"score": 1`, 1), err: "no current_score"},
		{name: "a blank criterion", text: strings.Replace(paperRubricator, "Lists the digit sets before counting", " ", 1), err: "rubrics[0].criterion: blank"},
		{name: "no criteria", text: `{"question_domain": "m", "rubrics": [], "maximum_score": 0, "minimum_score": 0, "current_score": -1}`, err: "rubrics: empty"},
		{name: "current at the midpoint", text: strings.Replace(paperRubricator, `"current_score": 1`, `"current_score": 1.5`, 1), problems: []string{"current_score 1.5 is not below"}},
		{name: "a maximum that lies", text: strings.Replace(paperRubricator, `"maximum_score": 9`, `"maximum_score": 100`, 1), problems: []string{"maximum_score 100 is not the sum"}},
		{name: "points out of range", text: strings.Replace(paperRubricator, `"points": -2`, `"points": -2.5`, 1), problems: []string{"rubrics[4].points -2.5", "minimum_score -6 is not the sum"}},
		{name: "too few criteria", text: `{"question_domain": "m", "rubrics": [{"category": "c", "criterion": "x", "points": 2}], "maximum_score": 2, "minimum_score": 0, "current_score": 0}`, problems: []string{"1 criteria, not 5 to 15"}},
	} {
		out, err := ParseRubricator(tc.text)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := out.FormatProblems()
		if len(got) != len(tc.problems) {
			t.Errorf("%s: format problems %q, want %q", tc.name, got, tc.problems)
			continue
		}
		for i, p := range tc.problems {
			if !strings.Contains(got[i], p) {
				t.Errorf("%s: problem %d %q, want one containing %q", tc.name, i, got[i], p)
			}
		}
	}
	out, _ := ParseRubricator(paperRubricator)
	if len(out.Rubrics) != 5 || out.Rubrics[3].Points != -4 || out.Domain != "math/digit-sequence-analysis" || out.CurrentScore != 1 {
		t.Errorf("parsed %+v", out)
	}
}

func TestCriterionKey(t *testing.T) {
	a := ProposedCriterion{Criterion: "Checks  the Result", Points: 3}
	b := ProposedCriterion{Criterion: "checks the result", Points: 1}
	c := ProposedCriterion{Criterion: "checks the result", Points: -1}
	if CriterionKey(a) != CriterionKey(b) || CriterionKey(a) == CriterionKey(c) {
		t.Errorf("keys %q %q %q: the same text and sign share a key, another sign does not", CriterionKey(a), CriterionKey(b), CriterionKey(c))
	}
}

// FuzzParseRubricator: no input panics the parser; a parse has criteria
// within the limits, and its format problems are computed without panic.
func FuzzParseRubricator(f *testing.F) {
	f.Add(paperRubricator)
	f.Add("```json\n" + paperRubricator + "\n```")
	f.Add(`{"rubrics": [{"criterion": 1}]}`)
	f.Add("<think>x</think>{}")
	f.Fuzz(func(t *testing.T, text string) {
		out, err := ParseRubricator(text)
		if err != nil {
			return
		}
		if len(out.Rubrics) == 0 || len(out.Rubrics) > MaxProposedCriteria {
			t.Fatalf("parsed %d criteria", len(out.Rubrics))
		}
		for _, c := range out.Rubrics {
			if strings.TrimSpace(c.Criterion) == "" || len(c.Criterion) > MaxCriterionBytes {
				t.Fatalf("criterion %q", c.Criterion)
			}
		}
		_ = out.FormatProblems()
	})
}
