package schema

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func scoreCriteria() []Criterion {
	return []Criterion{{ID: "c1", Weight: 3}, {ID: "c2", Weight: 1.5}, {ID: "c3", Weight: 0}}
}

func TestParseGroundedScores(t *testing.T) {
	tests := []struct {
		name   string
		reply  string
		scores []float64
		total  float64
		reason string
	}{
		{"plain", `{"scores": {"c1": 3, "c2": 0.5, "c3": 0}, "total": 3.5, "max_total": 4.5, "reasoning": "ok"}`, []float64{3, 0.5, 0}, 3.5, "ok"},
		{"any key order, fenced, prose", "Here you go:\n```json\n{\"max_total\": 4.5, \"Total\": 1, \"scores\": {\"c3\": 0, \"c2\": 1, \"c1\": 0}}\n```", []float64{0, 1, 0}, 1, ""},
		{"after a think block", "<think>{\"scores\": {}}</think>{\"scores\": {\"c1\": 1.25, \"c2\": 1.5, \"c3\": 0}, \"total\": 2.75, \"max_total\": 4.5, \"reasoning\": \"\"}", []float64{1.25, 1.5, 0}, 2.75, ""},
		{"total rounded to two decimals", `{"scores": {"c1": 1.333, "c2": 1.333, "c3": 0}, "total": 2.67, "max_total": 4.5, "reasoning": "r"}`, []float64{1.333, 1.333, 0}, 2.67, "r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseGroundedScores(tt.reply, scoreCriteria())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g.Scores, tt.scores) || g.Total != tt.total || g.MaxTotal != 4.5 || g.Reasoning != tt.reason {
				t.Errorf("got %+v, want scores %v total %v max 4.5 reasoning %q", g, tt.scores, tt.total, tt.reason)
			}
		})
	}
}

func TestParseGroundedScoresFailures(t *testing.T) {
	tests := []struct {
		name, reply, want string
	}{
		{"score above weight", `{"scores": {"c1": 4, "c2": 0, "c3": 0}, "total": 4, "max_total": 4.5}`,
			`line 1, field "scores.c1": 4 is above the criterion's weight 3; a score runs from 0 to the weight`},
		{"score above a zero weight", `{"scores": {"c1": 0, "c2": 0, "c3": 0.5}, "total": 0.5, "max_total": 4.5}`,
			`line 1, field "scores.c3": 0.5 is above the criterion's weight 0; a score runs from 0 to the weight`},
		{"negative score", `{"scores": {"c1": -1, "c2": 0, "c3": 0}, "total": -1, "max_total": 4.5}`,
			`line 1, field "scores.c1": -1 is below 0; a score runs from 0 to the criterion's weight, 3`},
		{"score as a string", `{"scores": {"c1": "3", "c2": 0, "c3": 0}, "total": 3, "max_total": 4.5}`,
			`line 1, field "scores.c1": must be a JSON number from 0 to 3, got the string "3"`},
		{"missing criterion", `{"scores": {"c1": 3}, "total": 3, "max_total": 4.5}`,
			`line 1, field "scores": no score for criteria "c2", "c3"; score every criterion id exactly once`},
		{"unknown criterion", `{"scores": {"c1": 3, "c2": 0, "c3": 0, "c4": 1}, "total": 4, "max_total": 4.5}`,
			`line 1, field "scores": unknown criterion id "c4"; the criterion ids are "c1", "c2", "c3"`},
		{"numbered instead of ids", `{"scores": {"1": 3, "2": 0, "3": 0}, "total": 3, "max_total": 4.5}`,
			`line 1, field "scores": unknown criterion id "1"; the criterion ids are "c1", "c2", "c3"`},
		{"criterion twice", `{"scores": {"c1": 3, "c1": 2, "c2": 0, "c3": 0}, "total": 3, "max_total": 4.5}`,
			`line 1, field "scores": criterion "c1" is scored twice; score every criterion id exactly once`},
		{"total not the sum", `{"scores": {"c1": 3, "c2": 1, "c3": 0}, "total": 3, "max_total": 4.5}`,
			`line 1, field "total": 3 is not the sum of the scores, 4`},
		{"total as a fraction", `{"scores": {"c1": 3, "c2": 1, "c3": 0}, "total": 0.89, "max_total": 1}`,
			`line 1, field "total": 0.89 is not the sum of the scores, 4`},
		{"max_total not W", `{"scores": {"c1": 3, "c2": 1, "c3": 0}, "total": 4, "max_total": 10}`,
			`line 1, field "max_total": 10 is not the criteria's total weight, 4.5`},
		{"missing total", `{"scores": {"c1": 3, "c2": 1, "c3": 0}, "max_total": 4.5}`,
			`line 1, field "total": missing`},
		{"missing max_total", `{"scores": {"c1": 3, "c2": 1, "c3": 0}, "total": 4}`,
			`line 1, field "max_total": missing`},
		{"scores as an array", `{"scores": [3, 1, 0], "total": 4, "max_total": 4.5}`,
			`line 1, field "scores": must be a JSON object keyed by criterion id, got an array`},
		{"no scores key", `{"total": 4, "max_total": 4.5}`,
			`line 1: the JSON object has no "scores" key`},
		{"reasoning not a string", `{"scores": {"c1": 3, "c2": 1, "c3": 0}, "total": 4, "max_total": 4.5, "reasoning": 5}`,
			`line 1, field "reasoning": must be a JSON string, got the number 5`},
		{"on a later line", "Scores:\n\n{\"scores\": {\"c1\": 9, \"c2\": 1, \"c3\": 0},\n \"total\": 10, \"max_total\": 4.5}",
			`line 3, field "scores.c1": 9 is above the criterion's weight 3; a score runs from 0 to the weight`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseGroundedScores(tt.reply, scoreCriteria())
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestParseGroundedScoresCallerFaults(t *testing.T) {
	reply := `{"scores": {"c1": 1}, "total": 1, "max_total": 1}`
	for name, cs := range map[string][]Criterion{
		"no criteria":     nil,
		"empty id":        {{ID: "", Weight: 1}},
		"repeated id":     {{ID: "c1", Weight: 1}, {ID: "c1", Weight: 1}},
		"negative weight": {{ID: "c1", Weight: -1}},
		"NaN weight":      {{ID: "c1", Weight: math.NaN()}},
	} {
		_, err := ParseGroundedScores(reply, cs)
		var pe *ParseError
		if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "ParseGroundedScores") {
			t.Errorf("%s: err = %v, want a plain caller error", name, err)
		}
	}
}

func FuzzParseGroundedScores(f *testing.F) {
	for _, s := range []string{
		`{"scores": {"c1": 3, "c2": 0.5, "c3": 0}, "total": 3.5, "max_total": 4.5, "reasoning": "ok"}`,
		`{"scores": {"c1": 4, "c2": 0, "c3": 0}, "total": 4, "max_total": 4.5}`,
		`{"scores": {"1": 3}, "total": 3, "max_total": 4.5}`,
		"<think>x</think>```json\n{\"scores\": {\"c1\": 1e0, \"c2\": 1.5, \"c3\": -0}, \"total\": 2.5, \"max_total\": 4.5}\n```",
		`{"scores": {"c1": 1e400}, "total": 1, "max_total": 4.5}`,
		`{"scores": {"c1": 1, "c1": 1}}`,
		`{"scores": null, "total": 0}`,
		`{"scores": {"c1": 3, "c2": 1.5, "c3": 0}, "total": 4.5, "max_total": 4.5} {"scores": {}}`,
	} {
		f.Add(s, 1.5)
	}
	f.Fuzz(func(t *testing.T, text string, w2 float64) {
		cs := scoreCriteria()
		if !math.IsNaN(w2) && !math.IsInf(w2, 0) && w2 >= 0 && w2 < 1e9 {
			cs[1].Weight = w2
		}
		g, err := ParseGroundedScores(text, cs)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("a fault of the reply returned a plain error: %v", err)
			}
			if pe.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		w := TotalWeight(cs)
		if len(g.Scores) != len(cs) {
			t.Fatalf("%d scores for %d criteria", len(g.Scores), len(cs))
		}
		var sum float64
		for k, s := range g.Scores {
			if !(s >= 0 && s <= cs[k].Weight) {
				t.Fatalf("score %v of %q outside [0, %v]", s, cs[k].ID, cs[k].Weight)
			}
			sum += s
		}
		if math.Abs(g.Total-sum) > SumTolerance(w) || math.Abs(g.MaxTotal-w) > SumTolerance(w) {
			t.Fatalf("accepted total %v (sum %v) max_total %v (W %v)", g.Total, sum, g.MaxTotal, w)
		}
	})
}
