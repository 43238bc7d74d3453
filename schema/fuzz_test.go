package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// addFiles adds the contents of the testdata files matching pattern as seeds.
func addFiles(f *testing.F, pattern string, add func(string)) {
	f.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files for %s: %v", pattern, err)
	}
	for _, p := range files {
		if strings.HasSuffix(p, ".golden.json") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(string(b))
	}
}

// renderSRaR writes items back as canonical rubric lines.
func renderSRaR(items []Item) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString("<<" + it.Type + ">>: " + it.Text + "\n")
	}
	return b.String()
}

func FuzzParseSRaR(f *testing.F) {
	addFiles(f, "testdata/srar/*.txt", func(s string) { f.Add(s, 0) })
	for _, s := range []string{
		"",
		"<<SUGGEST>>: a\n<<ANSWER>>: b",
		"**<<SUGGEST>>: a**\n- <Suggest> b\n1) [ANSWER] c <</ANSWER>>",
		"<<SUGGEST>>\na\n<</SUGGEST>>\n<<ANSWER>>: 1",
		"<<SUGGEST>>: a <<PITFALL>>: b",
		"<think>x</think>\n```text\n<<suggest>>: a\n  b\n<<answer>>: c\n```",
		"__<<BONUS>>__: x\n<<SUGGEST>>: y <</SUGGEST>> <</SUGGEST>>\n<<ANSWER>>: z",
		"<<SUGGEST>>: a <<BONUS>>\n: b\n<<ANSWER>>: c",
	} {
		f.Add(s, 0)
	}
	f.Add(manyLines(TypeSuggest, 3)+"<<ANSWER>>: a", 4)
	f.Fuzz(func(t *testing.T, text string, max int) {
		if max < 0 || max > 64 {
			max %= 65
			if max < 0 {
				max = -max
			}
		}
		res, err := ParseSRaR(text, SRaROptions{MaxItems: max})
		if err != nil {
			if res.Items != nil || res.Duplicates != 0 {
				t.Fatalf("result with error %v: %+v", err, res)
			}
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error %v is %T, not *ParseError", err, err)
			}
			return
		}
		limit := max
		if limit == 0 {
			limit = DefaultMaxItems
		}
		if err := CheckRubric(StyleSRaR, res.Items, limit); err != nil {
			t.Fatalf("result fails CheckRubric: %v\n%+v", err, res.Items)
		}
		if res.Duplicates < 0 {
			t.Fatalf("Duplicates = %d", res.Duplicates)
		}
		// Written back canonically, the items must parse to themselves.
		again, err := ParseSRaR(renderSRaR(res.Items), SRaROptions{MaxItems: max})
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, renderSRaR(res.Items))
		}
		if !reflect.DeepEqual(again.Items, res.Items) || again.Duplicates != 0 {
			t.Fatalf("canonical form parses differently:\n got %+v\nwant %+v", again, res.Items)
		}
	})
}

func renderFactualProcess(items []Item) string {
	type obj struct {
		Description string  `json:"description"`
		Weight      float64 `json:"weight"`
	}
	out := make([]obj, len(items))
	for i, it := range items {
		out[i] = obj{typeLabel(it.Type) + " " + it.Text, it.Weight}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func FuzzParseFactualProcess(f *testing.F) {
	addFiles(f, "testdata/factual/*.txt", func(s string) { f.Add(s) })
	for _, s := range []string{
		"[]",
		tenItems(),
		fpArray(`"**Factual Criteria:** a"`, "5.0", `"process criterion: b"`, "1", `"Process Criteria: c"`, "2"),
		fpArray(`"Factual Criteria: a"`, "2.5", `"Process Criteria: b"`, `"3"`, `"Process Criteria: c"`, "0"),
		`[{"description": "Factual Criteria: <\/think>", "weight": 1}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		items, err := ParseFactualProcess(text)
		if err != nil {
			if items != nil {
				t.Fatalf("items with error %v", err)
			}
			return
		}
		if err := CheckRubric(StyleFactualProcess, items, 0); err != nil {
			t.Fatalf("result fails CheckRubric: %v\n%+v", err, items)
		}
		again, err := ParseFactualProcess(renderFactualProcess(items))
		if err != nil || !reflect.DeepEqual(again, items) {
			t.Fatalf("canonical form parses differently: %v\n got %+v\nwant %+v", err, again, items)
		}
	})
}

func FuzzExtractJSON(f *testing.F) {
	addFiles(f, "testdata/factual/*.txt", func(s string) { f.Add(s, true) })
	addFiles(f, "testdata/judge/*.txt", func(s string) { f.Add(s, true) })
	for _, s := range []string{
		`{"valid": true, "reason": "a } b"}`,
		`x [1] "[" [2, "]\"", {"a": [3]}]`,
		`[{"a": 1]`,
		"<think>[1]</think>{}",
		`"\" [1]`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, array bool) {
		open, close := byte('{'), byte('}')
		if array {
			open, close = '[', ']'
		}
		got, err := ExtractJSON(text, open)
		if err != nil {
			if got != "" {
				t.Fatalf("span %q with error %v", got, err)
			}
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error %v is %T, not *ParseError", err, err)
			}
			return
		}
		if len(got) < 2 || got[0] != open || got[len(got)-1] != close {
			t.Fatalf("span %q does not start with %c and end with %c", got, open, close)
		}
		if !json.Valid([]byte(got)) {
			t.Fatalf("span %q is not valid JSON", got)
		}
		if !strings.Contains(text, got) {
			t.Fatalf("span %q is not in the text", got)
		}
	})
}

func FuzzParseValidity(f *testing.F) {
	for _, s := range []string{
		`{"valid": true, "reason": "ok"}`,
		`{"valid": "true", "reason": "ok"}`,
		"```json\n{\"Valid\": false, \"Reason\": \"wrong sign\", \"x\": 1}\n```",
		`{"valid": true, "valid": false, "reason": ""}`,
		`<think>{"valid": true}</think> {"valid": false, "reason": "<\/think>"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := ParseValidity(text)
		if err != nil {
			if v != (Verdict{}) {
				t.Fatalf("verdict with error %v: %+v", err, v)
			}
			return
		}
		if v.ID != 0 {
			t.Fatalf("ID = %d, want 0", v.ID)
		}
		b, _ := json.Marshal(map[string]any{"valid": v.Valid, "reason": v.Reason})
		again, err := ParseValidity(string(b))
		if err != nil || again != v {
			t.Fatalf("canonical form %s parses differently: %v, %+v", b, err, again)
		}
	})
}

// idsFrom turns fuzz bytes into distinct ids, some of them negative.
func idsFrom(b []byte) []int32 {
	seen := make(map[int32]bool)
	var ids []int32
	for _, c := range b {
		id := int32(c) - 8
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

func FuzzParseValidityBatch(f *testing.F) {
	addFiles(f, "testdata/judge/validity*.txt", func(s string) { f.Add(s, []byte{9, 10, 11}) })
	f.Add(`[{"id": 1, "valid": true, "reason": "a"}, {"id": 2, "valid": false, "reason": "b"}]`, []byte{9, 10})
	f.Add(`[{"id": 1, "valid": true, "reason": "a"}, {"id": 1, "valid": false, "reason": "b"}]`, []byte{9})
	f.Add(`[]`, []byte{})
	f.Fuzz(func(t *testing.T, text string, idBytes []byte) {
		ids := idsFrom(idBytes)
		vs, err := ParseValidityBatch(text, ids)
		if err != nil {
			if vs != nil {
				t.Fatalf("verdicts with error %v", err)
			}
			return
		}
		if len(vs) != len(ids) {
			t.Fatalf("%d verdicts for %d ids", len(vs), len(ids))
		}
		objs := make([]map[string]any, len(vs))
		for k, v := range vs {
			if v.ID != ids[k] {
				t.Fatalf("verdict %d has id %d, want %d", k, v.ID, ids[k])
			}
			objs[k] = map[string]any{"id": v.ID, "valid": v.Valid, "reason": v.Reason}
		}
		b, _ := json.Marshal(objs)
		again, err := ParseValidityBatch(string(b), ids)
		if err != nil || !reflect.DeepEqual(again, vs) {
			t.Fatalf("canonical form %s parses differently: %v, %+v", b, err, again)
		}
	})
}

func FuzzParseSatisfaction(f *testing.F) {
	addFiles(f, "testdata/judge/satisfy*.txt", func(s string) { f.Add(s, []byte{9, 10, 11, 12, 13}, 3) })
	f.Add(`[{"id": 1, "satisfied": true, "step": 2}, {"id": 2, "satisfied": false, "step": -1}]`, []byte{9, 10}, 2)
	f.Add(`[{"id": 1, "satisfied": "false", "step": 0}]`, []byte{9}, 0)
	f.Add(`[{"id": 1, "satisfied": 1, "step": 9}]`, []byte{9}, -1)
	f.Fuzz(func(t *testing.T, text string, idBytes []byte, steps int) {
		ids := idsFrom(idBytes)
		ss, err := ParseSatisfaction(text, ids, steps)
		if err != nil {
			if ss != nil {
				t.Fatalf("verdicts with error %v", err)
			}
			return
		}
		if len(ss) != len(ids) {
			t.Fatalf("%d verdicts for %d ids", len(ss), len(ids))
		}
		objs := make([]map[string]any, len(ss))
		for k, s := range ss {
			if s.ID != ids[k] {
				t.Fatalf("verdict %d has id %d, want %d", k, s.ID, ids[k])
			}
			if s.Step < -1 || (steps > 0 && int(s.Step) > steps) {
				t.Fatalf("verdict %d has step %d outside -1..%d", k, s.Step, steps)
			}
			objs[k] = map[string]any{"id": s.ID, "satisfied": s.Satisfied, "step": s.Step}
		}
		b, _ := json.Marshal(objs)
		again, err := ParseSatisfaction(string(b), ids, steps)
		if err != nil || !reflect.DeepEqual(again, ss) {
			t.Fatalf("canonical form %s parses differently: %v, %+v", b, err, again)
		}
	})
}
