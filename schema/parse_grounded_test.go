package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func criterionJSON(id string, weight any) map[string]any {
	return map[string]any{
		"id": id, "weight": weight, "name": "Name " + id, "description": "Describes " + id,
		"required_elements": []string{"element"}, "scoring_guide": "full or none",
		"verification_method": "check the passage", "expected_keywords": []string{"kw"}, "expected_concepts": []string{"concept"},
	}
}

func questionsJSON(t *testing.T, edit func(qs []map[string]any)) string {
	t.Helper()
	var qs []map[string]any
	for k := range 2 {
		var cs []any
		for i := range 5 {
			cs = append(cs, criterionJSON(fmt.Sprintf("c%d", i+1), 1.5))
		}
		qs = append(qs, map[string]any{"question": fmt.Sprintf("Why %d?", k), "question_rationale": "tests reasoning", "criteria": cs})
	}
	if edit != nil {
		edit(qs)
	}
	b, err := json.Marshal(map[string]any{"questions": qs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseQuestions(t *testing.T) {
	opt := QuestionOptions{K: 2, MinCriteria: 5, MaxCriteria: 10}
	qs, err := ParseQuestions("Here you go:\n```json\n"+questionsJSON(t, nil)+"\n```", opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[1].Index != 1 || qs[1].Question != "Why 1?" || len(qs[0].Criteria) != 5 ||
		qs[0].Criteria[4].ID != "c5" || qs[0].Criteria[0].Weight != 1.5 || TotalWeight(qs[0].Criteria) != 7.5 || qs[0].Answers == nil {
		t.Errorf("parsed %+v", qs)
	}
	for _, tc := range []struct {
		name string
		edit func(qs []map[string]any)
		want string
	}{
		{"a negative weight", func(qs []map[string]any) { qs[1]["criteria"].([]any)[2].(map[string]any)["weight"] = -1 },
			`field "questions[1].criteria[2].weight": must not be negative, got -1`},
		{"a weight as a string", func(qs []map[string]any) { qs[0]["criteria"].([]any)[0].(map[string]any)["weight"] = "3" },
			`field "questions[0].criteria[0].weight": must be a JSON number, got the string "3"`},
		{"a missing field", func(qs []map[string]any) { delete(qs[0]["criteria"].([]any)[3].(map[string]any), "scoring_guide") },
			`field "questions[0].criteria[3].scoring_guide": missing`},
		{"an empty required element", func(qs []map[string]any) {
			qs[0]["criteria"].([]any)[1].(map[string]any)["required_elements"] = []string{"a", " "}
		}, `field "questions[0].criteria[1].required_elements[1]": is empty`},
		{"no required elements", func(qs []map[string]any) {
			qs[0]["criteria"].([]any)[1].(map[string]any)["required_elements"] = []string{}
		},
			`field "questions[0].criteria[1].required_elements": has 0 entries; at least 1 are required`},
		{"too few criteria", func(qs []map[string]any) { qs[1]["criteria"] = qs[1]["criteria"].([]any)[:4] },
			`field "questions[1].criteria": has 4 criteria; between 5 and 10 are required`},
		{"a repeated id", func(qs []map[string]any) { qs[0]["criteria"].([]any)[4].(map[string]any)["id"] = "c2" },
			`field "questions[0].criteria[4].id": "c2" is also the id of criteria[1]`},
		{"an empty question", func(qs []map[string]any) { qs[0]["question"] = "  " }, `field "questions[0].question": is empty`},
		{"no rationale", func(qs []map[string]any) { delete(qs[1], "question_rationale") }, `field "questions[1].question_rationale": missing`},
		{"a numeric id", func(qs []map[string]any) { qs[0]["criteria"].([]any)[0].(map[string]any)["id"] = 1 },
			`field "questions[0].criteria[0].id": must be a JSON string, got the number 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseQuestions(questionsJSON(t, tc.edit), opt)
			if _, ok := err.(*ParseError); !ok || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a ParseError saying %s", err, tc.want)
			}
		})
	}
	if _, err := ParseQuestions(questionsJSON(t, nil), QuestionOptions{K: 3, MinCriteria: 5, MaxCriteria: 10}); err == nil ||
		!strings.Contains(err.Error(), `field "questions": has 2 entries; exactly 3 are required`) {
		t.Errorf("wrong count: %v", err)
	}
	if _, err := ParseQuestions(`{"question": "x"}`, opt); err == nil || !strings.Contains(err.Error(), `no "questions" key`) {
		t.Errorf("no questions key: %v", err)
	}
}

func TestParseAnalysis(t *testing.T) {
	a, err := ParseAnalysis(`<think>hmm {"x":1}</think>{"genre": "report", "contribution": "c", "concepts": ["a", "b"], "depth": "advanced", "reasoning_mode": "derivation", "extra": 1}`)
	if err != nil || a.Genre != "report" || len(a.Concepts) != 2 || a.ReasoningMode != "derivation" {
		t.Fatalf("%+v %v", a, err)
	}
	for _, tc := range []struct{ reply, want string }{
		{`{"genre": "r", "contribution": "c", "concepts": [], "depth": "d", "reasoning_mode": "m"}`, `field "concepts": has 0 entries`},
		{`{"genre": "r", "contribution": "c", "concepts": "a, b", "depth": "d", "reasoning_mode": "m"}`, `field "concepts": must be a JSON array of strings`},
		{`{"genre": "r", "contribution": "c", "concepts": ["a"], "depth": "d"}`, `field "reasoning_mode": missing`},
		{`{"genre": "r", "Genre": "s", "contribution": "c", "concepts": ["a"], "depth": "d", "reasoning_mode": "m"}`, `the key is given twice`},
		{`no json here`, `no JSON object`},
	} {
		if _, err := ParseAnalysis(tc.reply); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s", tc.reply, err, tc.want)
		}
	}
}

func TestParseEnrichment(t *testing.T) {
	ids := []string{"c2", "c5"}
	es, err := ParseEnrichment(`[{"id": "c5", "verification_method": "v5", "expected_keywords": ["a","b","c"], "expected_concepts": ["x","y"]},
 {"id": "c2", "verification_method": "v2", "expected_keywords": ["d","e","f"], "expected_concepts": ["z","w"]}]`, ids, 3, 2)
	if err != nil || es[0].ID != "c2" || es[1].VerificationMethod != "v5" || es[0].Keywords[2] != "f" {
		t.Fatalf("%+v %v", es, err)
	}
	for _, tc := range []struct{ reply, want string }{
		{`[{"id": "c2", "verification_method": "v", "expected_keywords": ["a","b","c"], "expected_concepts": ["x","y"]}]`, `no completion for "c5"`},
		{`[{"id": "c9", "verification_method": "v", "expected_keywords": ["a","b","c"], "expected_concepts": ["x","y"]}]`, `unknown id "c9"; the ids are "c2", "c5"`},
		{`[{"id": "c2", "verification_method": "v", "expected_keywords": ["a"], "expected_concepts": ["x","y"]}]`, `field "[0].expected_keywords": has 1 entries; at least 3`},
	} {
		if _, err := ParseEnrichment(tc.reply, ids, 3, 2); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

func TestQualityProblems(t *testing.T) {
	passage := "The wick returns the condensed liquid to the evaporator by capillary action, which lets the heat pipe work against gravity."
	good := GroundedQuestion{Question: "How can a heat pipe keep working when the hot end is above the cold end?", Rationale: "r"}
	for i := range 5 {
		var c Criterion
		json.Unmarshal(mustJSON(criterionJSON(fmt.Sprintf("c%d", i), 2)), &c)
		good.Criteria = append(good.Criteria, c)
	}
	rules := QualityRules{MinCriteria: 5, MinTotalWeight: 5, MaxCopiedWords: 6}
	if p := QualityProblems(good, passage, rules); len(p) != 0 {
		t.Errorf("a good tuple fails: %q", p)
	}
	copied := good
	copied.Question = "Explain why the wick returns the condensed liquid to the evaporator by capillary action."
	light := good
	light.Criteria = append([]Criterion(nil), good.Criteria...)
	for i := range light.Criteria {
		light.Criteria[i].Weight = 0.5
	}
	thin := good
	thin.Criteria = append([]Criterion(nil), good.Criteria[:4]...)
	thin.Criteria[0].ExpectedConcepts = nil
	enriched := rules
	enriched.EnrichFills = true
	for _, tc := range []struct {
		q     GroundedQuestion
		rules QualityRules
		want  []string
	}{
		{thin, enriched, []string{"4 criteria, fewer than the 5 required"}}, // expected_concepts: the enrich stage fills it
		{copied, rules, []string{`the question copies 12 consecutive words of the passage ("the wick returns the condensed liquid to the evaporator by capillary action"); at most 6 are allowed`}},
		{light, rules, []string{"total weight 2.5 is below the minimum 5"}},
		{thin, rules, []string{"4 criteria, fewer than the 5 required", `criterion 1 ("c0") has no expected_concepts`}},
	} {
		got := QualityProblems(tc.q, passage, tc.rules)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("got %q\nwant %q", got, tc.want)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// FuzzParseGrounded: no reply makes the grounded parsers panic, and what
// they accept holds what they promise.
func FuzzParseGrounded(f *testing.F) {
	f.Add(`{"genre": "r", "contribution": "c", "concepts": ["a"], "depth": "d", "reasoning_mode": "m"}`)
	f.Add(`{"questions": [{"question": "q", "question_rationale": "r", "criteria": [{"id": "c1", "weight": 1e308, "name": "n", "description": "d", "required_elements": ["e"], "scoring_guide": "g", "verification_method": "v", "expected_keywords": [], "expected_concepts": ["c"]}]}]}`)
	f.Add(`[{"id": "c1", "verification_method": "v", "expected_keywords": ["a"], "expected_concepts": ["x"]}]`)
	f.Add(`{"questions": [{"criteria": [null, 1, "x"]}]}`)
	f.Fuzz(func(t *testing.T, reply string) {
		if a, err := ParseAnalysis(reply); err == nil && (a.Genre == "" || len(a.Concepts) == 0) {
			t.Fatalf("accepted an empty analysis: %+v", a)
		}
		if qs, err := ParseQuestions(reply, QuestionOptions{K: 1, MinCriteria: 1, MaxCriteria: 10}); err == nil {
			for _, c := range qs[0].Criteria {
				if c.Weight < 0 || c.ID == "" || len(c.RequiredElements) == 0 || c.ScoringGuide == "" {
					t.Fatalf("accepted a bad criterion: %+v", c)
				}
			}
		}
		if es, err := ParseEnrichment(reply, []string{"c1"}, 1, 1); err == nil && (len(es) != 1 || es[0].ID != "c1" || len(es[0].Keywords) == 0) {
			t.Fatalf("accepted a bad enrichment: %+v", es)
		}
	})
}
