package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLabelRoundTrip(t *testing.T) {
	valid := true
	rec := &Record{ID: "00ab", Source: "demo", Style: StyleSRaR, Problem: "2+2?", Answer: "4", Rubric: []Item{
		{ID: 1, Type: TypeSuggest, Text: "Adds the numbers.", Weight: 1, Polarity: 1, Valid: &valid},
		{ID: 2, Type: TypePitfall, Text: "Multiplies instead.", Weight: 1, Polarity: -1},
		{ID: 3, Type: TypeAnswer, Text: "States 4.", Weight: 1, Polarity: 1},
	}}
	l := LabelOf(rec)
	if l.Scheme != SchemeSRaR || l.V != SpecVersion || l.GroundTruth != "4" || l.Question != "2+2?" {
		t.Fatalf("LabelOf = %+v", l)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseLabel(b)
	if err != nil {
		t.Fatalf("ParseLabel: %v", err)
	}
	if len(got.Rubric) != 3 || got.Rubric[1].Polarity != -1 || got.Rubric[0].Valid == nil || !*got.Rubric[0].Valid {
		t.Fatalf("round trip lost data: %+v", got)
	}
	rec.Rubric[0].Text = "changed"
	if l.Rubric[0].Text == "changed" {
		t.Fatal("LabelOf shares the record's rubric")
	}
	if DefaultScheme(StyleFactualProcess) != SchemeRGR {
		t.Fatal("factual_process rubrics default to rgr")
	}
}

func TestParseLabelErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not an object", `[1]`, "expected a JSON object"},
		{"empty", ``, "expected a JSON object"},
		{"bad json", `{"rubric": [`, "label:"},
		{"no items", `{"id":"a","rubric":[]}`, "label.rubric: no items"},
		{"bad type", `{"rubric":[{"id":1,"type":"FOO","text":"x"}]}`, `label.rubric[0].type: "FOO"`},
		{"blank text", `{"rubric":[{"id":1,"type":"SUGGEST","text":"  "}]}`, "label.rubric[0].text: empty"},
		{"dup id", `{"rubric":[{"id":1,"type":"SUGGEST","text":"a"},{"id":1,"type":"BONUS","text":"b"}]}`, "label.rubric[1].id: 1 appears twice"},
		{"bad polarity", `{"rubric":[{"id":1,"type":"SUGGEST","text":"a","polarity":3}]}`, "label.rubric[0].polarity"},
		{"bad scheme", `{"scheme":"nope","rubric":[{"id":1,"type":"SUGGEST","text":"a"}]}`, `label.scheme: "nope"`},
		{"wrong field type", `{"rubric":[{"id":"one","type":"SUGGEST","text":"a"}]}`, "rubric.id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLabel([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseLabel(%s) error = %v, want it to contain %q", tc.in, err, tc.want)
			}
		})
	}
	l, err := ParseLabel([]byte(`{"rubric":[{"id":2,"type":"PITFALL","text":"a"}],"extra":1}`))
	if err != nil || l.Rubric[0].Polarity != -1 {
		t.Fatalf("missing polarity not filled from the type: %+v, %v", l, err)
	}
}

func FuzzParseLabel(f *testing.F) {
	f.Add([]byte(`{"v":"2","id":"x","scheme":"srar","rubric":[{"id":1,"type":"SUGGEST","text":"a","weight":1}]}`))
	f.Add([]byte(`{"rubric":[{"id":1,"type":"FACTUAL","text":"a","weight":5,"polarity":-1}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"x-q0","style":"grounded","question":"Why?","rubric":[],"grounded":{"passage":"p","criteria":[{"id":"c1","weight":2}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLabel(b)
		if err != nil {
			return
		}
		if l.Grounded != nil {
			if len(l.Rubric) > 0 || len(l.Grounded.Criteria) == 0 || !(TotalWeight(l.Grounded.Criteria) > 0) || l.Scheme != SchemeGrounded {
				t.Fatalf("accepted a grounded label with items %d, criteria %+v, scheme %q", len(l.Rubric), l.Grounded.Criteria, l.Scheme)
			}
			return
		}
		if len(l.Rubric) == 0 {
			t.Fatal("accepted a label without items")
		}
		for _, it := range l.Rubric {
			if it.Polarity != 1 && it.Polarity != -1 {
				t.Fatalf("accepted polarity %d", it.Polarity)
			}
		}
	})
}
