package sim

import (
	"encoding/json"
	"math"
	"testing"
)

// groundedReplyValues are a reply of each kind built from the strings s,
// t and a weight w, nil and empty lists included.
func groundedReplyValues(s, t string, w any) map[string]jsonAppender {
	crit := criterionJSON{ID: s, Weight: w, Name: t, Description: s + t, RequiredElements: []string{s, t},
		ScoringGuide: t, VerificationMethod: s, ExpectedKeywords: []string{}, ExpectedConcepts: nil}
	return map[string]jsonAppender{
		"questions":         questionsReply{{Question: s, Rationale: t, Criteria: []criterionJSON{crit, crit}}, {Question: t}},
		"no questions":      questionsReply(nil),
		"empty questions":   questionsReply{},
		"enrichment":        enrichReply{{ID: s, VerificationMethod: t, ExpectedKeywords: []string{t, s}, ExpectedConcepts: nil}, {}},
		"no enrichment":     enrichReply(nil),
		"analysis":          analysisJSON{Genre: s, Contribution: t, Concepts: []string{s, t, ""}, Depth: t, ReasoningMode: s},
		"analysis, no list": analysisJSON{Genre: s},
	}
}

// the value each appender stands for, as marshalOrFence passed it to
// json.Marshal before.
func marshalledBefore(v jsonAppender) any {
	if q, ok := v.(questionsReply); ok {
		return map[string]any{"questions": []questionJSON(q)}
	}
	if e, ok := v.(enrichReply); ok {
		return []enrichJSON(e)
	}
	return v
}

func checkReplyJSON(t *testing.T, s, u string, w any) {
	t.Helper()
	for name, v := range groundedReplyValues(s, u, w) {
		want, err := json.Marshal(marshalledBefore(v))
		if err != nil {
			continue // a weight encoding/json cannot write (NaN); never drawn
		}
		if got := v.appendJSON(nil); string(got) != string(want) {
			t.Errorf("%s (%q, %q, %v):\n got %s\nwant %s", name, s, u, w, got, want)
		}
	}
}

func TestGroundedReplyJSONMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s, t string
		w    any
	}{
		{"c1", "Role of catalyst", 3},
		{"", "", 0},
		{`quote " and \ backslash`, "<html> & ampersand", 2.5},
		{"control \x00\x1f\t\n", "unicode é ü 日本 \u2028 \u2029", -2},
		{"invalid \xff utf8", "emoji 😀", "3"},
		{"big", "small", 1e21},
		{"tiny", "neg zero", math.Copysign(0, -1)},
		{"frac", "exp", 1.25e-7},
		{"other", "type", []int{1}},
	} {
		checkReplyJSON(t, tc.s, tc.t, tc.w)
	}
}

func FuzzGroundedReplyJSON(f *testing.F) {
	f.Add("c1", "Role of <x> & \"y\"", 3, 1.5, false)
	f.Add("\xff\x00", "\u2028", -2, 0.0, true)
	f.Fuzz(func(t *testing.T, s, u string, n int, x float64, useFloat bool) {
		var w any = n
		if useFloat {
			w = x
		}
		checkReplyJSON(t, s, u, w)
	})
}

func BenchmarkGroundedSynthesizeReply(b *testing.B) {
	crit := criterionJSON{ID: "c1", Weight: 3, Name: "Role of catalyst", Description: "The answer explains the role of catalyst and how it bears on appears.",
		RequiredElements: []string{"catalyst", "catalyst in relation to appears"}, ScoringGuide: "Full weight for a correct, specific account; half for a vague one; none if missing or wrong.",
		VerificationMethod: "Compare the answer's statements about catalyst with what the passage says about it.",
		ExpectedKeywords:   []string{"catalyst", "appears", "beyond"}, ExpectedConcepts: []string{"catalyst", "catalyst"}}
	q := questionJSON{Question: "In Unit 84: the catalyst, how does catalyst interact with appears?", Rationale: "Answering needs an account.",
		Criteria: []criterionJSON{crit, crit, crit, crit, crit, crit, crit}}
	r := newRNG(1)
	b.ReportAllocs()
	for b.Loop() {
		_ = marshalOrFence(questionsReply{q}, r, true)
	}
}
