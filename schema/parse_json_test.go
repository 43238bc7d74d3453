package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func fp(id int32, typ, text string, w float64) Item {
	return Item{ID: id, Type: typ, Text: text, Weight: w, Polarity: 1}
}

// fpArray builds a factual/process reply from description and weight literals.
func fpArray(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, fmt.Sprintf(`{"description": %s, "weight": %s}`, pairs[i], pairs[i+1]))
	}
	return "[" + strings.Join(parts, ",\n") + "]"
}

func tenItems() string {
	var pairs []string
	for i := range 10 {
		pairs = append(pairs, fmt.Sprintf(`"Process Criteria: step %d"`, i), fmt.Sprint(i%5+1))
	}
	return fpArray(pairs...)
}

func TestParseFactualProcess(t *testing.T) {
	three := func(first, w string) string {
		return fpArray(first, w, `"Process Criteria: b"`, "3", `"Process Criteria: c"`, "2")
	}
	rest := []Item{fp(2, TypeProcess, "b", 3), fp(3, TypeProcess, "c", 2)}
	tests := []struct {
		name string
		in   string
		want []Item
	}{
		{"plain", three(`"Factual Criteria: States x = 2."`, "5"), append([]Item{fp(1, TypeFactual, "States x = 2.", 5)}, rest...)},
		{"lower case prefix", three(`"factual criteria: a"`, "5"), append([]Item{fp(1, TypeFactual, "a", 5)}, rest...)},
		{"bold prefix, colon inside", three(`"**Factual Criteria:** a"`, "5"), append([]Item{fp(1, TypeFactual, "a", 5)}, rest...)},
		{"bold prefix, colon outside", three(`"**Factual Criteria**: a"`, "5"), append([]Item{fp(1, TypeFactual, "a", 5)}, rest...)},
		{"whole description bold", three(`"**Factual Criteria: a**"`, "5"), append([]Item{fp(1, TypeFactual, "a", 5)}, rest...)},
		{"criterion singular, extra spaces", three(`"  Factual   Criterion :   a  b "`, "5"), append([]Item{fp(1, TypeFactual, "a b", 5)}, rest...)},
		{"emphasis in the text stays", three(`"Factual Criteria: *x* is prime"`, "5"), append([]Item{fp(1, TypeFactual, "*x* is prime", 5)}, rest...)},
		{"integer-valued float weight", three(`"Factual Criteria: a"`, "5.0"), append([]Item{fp(1, TypeFactual, "a", 5)}, rest...)},
		{"exponent weight", three(`"Factual Criteria: a"`, "4e0"), append([]Item{fp(1, TypeFactual, "a", 4)}, rest...)},
		{"newline in description collapsed", three(`"Factual Criteria: a\nb"`, "1"), append([]Item{fp(1, TypeFactual, "a b", 1)}, rest...)},
		{"ten items", tenItems(), func() []Item {
			var out []Item
			for i := range 10 {
				out = append(out, fp(int32(i+1), TypeProcess, fmt.Sprintf("step %d", i), float64(i%5+1)))
			}
			return out
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFactualProcess(tt.in)
			if err != nil {
				t.Fatalf("ParseFactualProcess: %v", err)
			}
			assertItems(t, got, tt.want)
			if err := CheckRubric(StyleFactualProcess, got, 0); err != nil {
				t.Errorf("CheckRubric: %v", err)
			}
		})
	}
}

func TestParseFactualProcessBad(t *testing.T) {
	ok := `"Process Criteria: b"`
	tests := []struct {
		name string
		in   string
		want ParseError
	}{
		{"weight fraction", fpArray(`"Factual Criteria: a"`, "5", ok, "2.5", `"Process Criteria: c"`, "1"), ParseError{Line: 2, Item: 2, Field: "weight", Msg: "must be an integer from 1 to 5, got 2.5"}},
		{"weight string", fpArray(`"Factual Criteria: a"`, `"3"`, ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "weight", Msg: `got the string "3"`}},
		{"weight zero", fpArray(`"Factual Criteria: a"`, "0", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "weight", Msg: "got 0"}},
		{"weight six", fpArray(`"Factual Criteria: a"`, "5", ok, "2", `"Process Criteria: c"`, "6"), ParseError{Line: 3, Item: 3, Field: "weight", Msg: "got 6"}},
		{"weight negative", fpArray(`"Factual Criteria: a"`, "-1", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "weight", Msg: "got -1"}},
		{"weight huge", fpArray(`"Factual Criteria: a"`, "1e999", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "weight", Msg: "got 1e999"}},
		{"weight null", fpArray(`"Factual Criteria: a"`, "null", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "weight", Msg: "is null"}},
		{"weight bool", fpArray(`"Factual Criteria: a"`, "true", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "weight", Msg: "got the boolean true"}},
		{"weight missing", `[{"description": "Factual Criteria: a"}, {"description": "Process Criteria: b", "weight": 1}, {"description": "Process Criteria: c", "weight": 1}]`, ParseError{Line: 1, Item: 1, Field: "weight", Msg: "missing"}},
		{"description missing", `[{"weight": 1}, {"description": "Process Criteria: b", "weight": 1}, {"description": "Process Criteria: c", "weight": 1}]`, ParseError{Line: 1, Item: 1, Field: "description", Msg: "missing"}},
		{"description number", fpArray("7", "5", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "description", Msg: "must be a JSON string, got the number 7"}},
		{"no prefix", fpArray(`"States x = 2."`, "5", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "description", Msg: `must begin with "Factual Criteria: "`}},
		{"other prefix", fpArray(`"Factual Criteria: a"`, "5", `"Style Criteria: b"`, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 2, Item: 2, Field: "description", Msg: `got "Style Criteria: b"`}},
		{"prefix without colon", fpArray(`"Factual Criteria a"`, "5", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "description", Msg: "must begin with"}},
		{"prefix only", fpArray(`"Factual Criteria:  "`, "5", ok, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 1, Item: 1, Field: "description", Msg: "no text after"}},
		{"duplicate key", `[{"description": "Factual Criteria: a", "weight": 5, "Weight": 4}, {"description": "Process Criteria: b", "weight": 1}, {"description": "Process Criteria: c", "weight": 1}]`, ParseError{Line: 1, Item: 1, Field: "Weight", Msg: "given twice"}},
		{"duplicate item", fpArray(`"Factual Criteria: a"`, "5", `"Factual Criteria:  a "`, "2", `"Process Criteria: c"`, "1"), ParseError{Line: 2, Item: 2, Field: "description", Msg: "repeats item 1"}},
		{"two items", fpArray(`"Factual Criteria: a"`, "5", ok, "2"), ParseError{Line: 1, Msg: "has 2 items; between 3 and 10"}},
		{"eleven items", "[" + strings.Repeat(`{"description": "Process Criteria: x", "weight": 1},`, 10) + `{"description": "Process Criteria: x", "weight": 1}]`, ParseError{Line: 1, Msg: "has 11 items"}},
		{"empty array", "[]", ParseError{Line: 1, Msg: "has 0 items"}},
		{"array of strings", `["Factual Criteria: a", "Process Criteria: b", "Process Criteria: c"]`, ParseError{Line: 1, Item: 1, Msg: "expected a JSON array of objects"}},
		{"object instead of array", `{"items": 3}`, ParseError{Msg: "no JSON array"}},
		{"no JSON", "I am not able to write this rubric.", ParseError{Msg: "no JSON array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFactualProcess(tt.in)
			assertParseError(t, err, tt.want)
			if got != nil {
				t.Errorf("items with the error: %v", got)
			}
		})
	}
}

func TestParseFactualProcessFiles(t *testing.T) {
	bad := map[string]ParseError{
		"bad_weight_fraction.txt": {Line: 3, Item: 2, Field: "weight", Msg: "got 2.5"},
		"bad_truncated.txt":       {Line: 2, Msg: "never closed"},
	}
	runFiles(t, "testdata/factual/*.txt", bad, func(in string) (any, error) {
		items, err := ParseFactualProcess(in)
		if err == nil {
			if err := CheckRubric(StyleFactualProcess, items, 0); err != nil {
				t.Errorf("CheckRubric: %v", err)
			}
		}
		return items, err
	})
}

// runFiles parses every file matching pattern: good_* against its golden,
// bad_* against bad.
func runFiles(t *testing.T, pattern string, bad map[string]ParseError, parse func(string) (any, error)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata for %s: %v", pattern, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parse(string(in))
			if want, isBad := bad[name]; isBad {
				assertParseError(t, err, want)
				return
			}
			if !strings.HasPrefix(name, "good_") {
				t.Fatalf("%s: name must start with good_ or be listed as bad", name)
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".txt")+".golden.json", got)
		})
	}
}

func TestParseValidity(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Verdict
	}{
		{"plain", `{"valid": true, "reason": "Correct and specific."}`, Verdict{Valid: true, Reason: "Correct and specific."}},
		{"false", `{"valid": false, "reason": "The sum of the roots is 7, not -7."}`, Verdict{Reason: "The sum of the roots is 7, not -7."}},
		{"fenced with prose", "Verdict:\n```json\n{\"valid\": false, \"reason\": \"Uses {a, b} notation wrongly\"}\n```", Verdict{Reason: "Uses {a, b} notation wrongly"}},
		{"capitalised keys, extra key", `{"Valid": true, "Reason": "ok", "confidence": 0.9}`, Verdict{Valid: true, Reason: "ok"}},
		{"empty reason", `{"valid": true, "reason": ""}`, Verdict{Valid: true}},
		{"prose object first", `I consider {the set} first. {"valid": true, "reason": "r"}`, Verdict{Valid: true, Reason: "r"}},
		{"object without valid first", `{"note": 1} {"valid": true, "reason": "r"}`, Verdict{Valid: true, Reason: "r"}},
		{"inside a one-element array", `[{"valid": true, "reason": "r"}]`, Verdict{Valid: true, Reason: "r"}},
		{"think draft skipped", `<think>{"valid": true, "reason": "draft"}</think>{"valid": false, "reason": "final"}`, Verdict{Reason: "final"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseValidity(tt.in)
			if err != nil {
				t.Fatalf("ParseValidity: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseValidityBad(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ParseError
	}{
		{"string bool", `{"valid": "true", "reason": "r"}`, ParseError{Line: 1, Field: "valid", Msg: `must be a JSON boolean (true or false), got the string "true"`}},
		{"number bool", `{"valid": 1, "reason": "r"}`, ParseError{Line: 1, Field: "valid", Msg: "got the number 1"}},
		{"null", `{"valid": null, "reason": "r"}`, ParseError{Line: 1, Field: "valid", Msg: "is null"}},
		{"no reason", `{"valid": true}`, ParseError{Line: 1, Field: "reason", Msg: "missing"}},
		{"reason not a string", "\n{\"valid\": true, \"reason\": [\"a\"]}", ParseError{Line: 2, Field: "reason", Msg: "got an array"}},
		{"no valid key", `{"verdict": "valid", "reason": "r"}`, ParseError{Line: 1, Msg: `no "valid" key`}},
		{"duplicate key", `{"valid": true, "valid": false, "reason": "r"}`, ParseError{Line: 1, Field: "valid", Msg: "given twice"}},
		{"python literals", `{"valid": True, "reason": "r"}`, ParseError{Line: 1, Msg: "not valid JSON"}},
		{"truncated", `{"valid": true, "reason": "the item is`, ParseError{Line: 1, Msg: "never closed"}},
		{"no JSON", "valid", ParseError{Msg: "no JSON object"}},
		{"array of different verdicts", "[\n{\"valid\": true, \"reason\": \"a\"},\n{\"valid\": false, \"reason\": \"b\"}]", ParseError{Line: 1, Msg: "got an array of 2"}},
		{"array of one verdict twice", "[\n{\"valid\": true, \"reason\": \"a\"},\n{\"valid\": true, \"reason\": \"b\"}]", ParseError{Line: 1, Msg: "got an array of 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseValidity(tt.in)
			assertParseError(t, err, tt.want)
			if got != (Verdict{}) {
				t.Errorf("verdict with the error: %+v", got)
			}
		})
	}
}

func TestParseValidityBatch(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ids  []int32
		want []Verdict
	}{
		{"in order", `[{"id": 1, "valid": true, "reason": "a"}, {"id": 2, "valid": false, "reason": "b"}]`, []int32{1, 2},
			[]Verdict{{1, true, "a"}, {2, false, "b"}}},
		{"reordered to ids", `[{"id": 7, "valid": true, "reason": "a"}, {"id": 3, "valid": false, "reason": "b"}]`, []int32{3, 7},
			[]Verdict{{3, false, "b"}, {7, true, "a"}}},
		{"ids in caller order", `[{"id": 1, "valid": true, "reason": "a"}, {"id": 2, "valid": false, "reason": "b"}]`, []int32{2, 1},
			[]Verdict{{2, false, "b"}, {1, true, "a"}}},
		{"float id", `[{"id": 1.0, "valid": true, "reason": "a"}]`, []int32{1}, []Verdict{{1, true, "a"}}},
		{"empty", `[]`, nil, []Verdict{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseValidityBatch(tt.in, tt.ids)
			if err != nil {
				t.Fatalf("ParseValidityBatch: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	in, err := os.ReadFile("testdata/judge/validity_batch_good.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseValidityBatch(string(in), []int32{1, 2, 3})
	if err != nil {
		t.Fatalf("file: %v", err)
	}
	if len(got) != 3 || !got[0].Valid || !got[1].Valid || got[2].Valid || !strings.Contains(got[2].Reason, "not -7") {
		t.Errorf("file: got %+v", got)
	}
}

func TestParseValidityBatchBad(t *testing.T) {
	ids := []int32{1, 2, 3}
	tests := []struct {
		name string
		in   string
		want ParseError
	}{
		{"missing id", "[\n{\"id\": 1, \"valid\": true, \"reason\": \"a\"},\n{\"id\": 3, \"valid\": true, \"reason\": \"c\"}\n]", ParseError{Msg: "no verdict for id 2"}},
		{"missing ids", `[{"id": 2, "valid": true, "reason": "a"}]`, ParseError{Msg: "no verdict for ids 1, 3"}},
		{"duplicate id", "[\n{\"id\": 1, \"valid\": true, \"reason\": \"a\"},\n{\"id\": 2, \"valid\": true, \"reason\": \"b\"},\n{\"id\": 1, \"valid\": false, \"reason\": \"c\"}\n]",
			ParseError{Line: 4, Item: 3, Field: "id", Msg: "id 1 appears twice (items 1 and 3)"}},
		{"unknown id", "[\n{\"id\": 1, \"valid\": true, \"reason\": \"a\"},\n{\"id\": 9, \"valid\": true, \"reason\": \"b\"}\n]",
			ParseError{Line: 3, Item: 2, Field: "id", Msg: "unknown id 9; the ids are 1 to 3"}},
		{"string id", `[{"id": "1", "valid": true, "reason": "a"}]`, ParseError{Line: 1, Item: 1, Field: "id", Msg: `got the string "1"`}},
		{"fractional id", `[{"id": 1.5, "valid": true, "reason": "a"}]`, ParseError{Line: 1, Item: 1, Field: "id", Msg: "must be an integer, got 1.5"}},
		{"id out of int32", `[{"id": 4294967297, "valid": true, "reason": "a"}]`, ParseError{Line: 1, Item: 1, Field: "id", Msg: "got 4294967297"}},
		{"no id", `[{"valid": true, "reason": "a"}]`, ParseError{Line: 1, Item: 1, Field: "id", Msg: "missing"}},
		{"string bool", `[{"id": 1, "valid": "false", "reason": "a"}]`, ParseError{Line: 1, Item: 1, Field: "valid", Msg: `got the string "false"`}},
		{"no reason", `[{"id": 1, "valid": false}]`, ParseError{Line: 1, Item: 1, Field: "reason", Msg: "missing"}},
		{"element not an object", `[{"id": 1, "valid": true, "reason": "a"}, 2]`, ParseError{Line: 1, Item: 2, Msg: "this element is the number 2"}},
		{"object not array", `{"id": 1, "valid": true, "reason": "a"}`, ParseError{Msg: "no JSON array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseValidityBatch(tt.in, ids)
			assertParseError(t, err, tt.want)
			if got != nil {
				t.Errorf("verdicts with the error: %+v", got)
			}
		})
	}
}

func TestParseSatisfaction(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		ids   []int32
		steps int
		want  []Satisfaction
	}{
		{"all step kinds", `[{"id": 1, "satisfied": true, "step": 2}, {"id": 2, "satisfied": false, "step": -1}, {"id": 3, "satisfied": true, "step": 0}]`,
			[]int32{1, 2, 3}, 2, []Satisfaction{{1, true, 2}, {2, false, -1}, {3, true, 0}}},
		{"steps unknown: any step >= -1", `[{"id": 1, "satisfied": true, "step": 40}]`, []int32{1}, 0, []Satisfaction{{1, true, 40}}},
		{"integer-valued float step", `[{"id": 1, "satisfied": true, "step": 3.0}]`, []int32{1}, 3, []Satisfaction{{1, true, 3}}},
		{"extra keys ignored", `[{"id": 1, "satisfied": false, "step": 1, "reason": "no", "confidence": "high"}]`, []int32{1}, 1, []Satisfaction{{1, false, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSatisfaction(tt.in, tt.ids, tt.steps)
			if err != nil {
				t.Fatalf("ParseSatisfaction: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	in, err := os.ReadFile("testdata/judge/satisfy_good.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSatisfaction(string(in), []int32{1, 2, 3, 4, 5}, 3)
	want := []Satisfaction{{1, true, 1}, {2, true, 2}, {3, false, -1}, {4, false, 3}, {5, true, 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("file: got %+v, %v; want %+v", got, err, want)
	}
}

func TestParseSatisfactionBad(t *testing.T) {
	ids := []int32{1, 2}
	tests := []struct {
		name  string
		in    string
		steps int
		want  ParseError
	}{
		{"string false is not true", `[{"id": 1, "satisfied": true, "step": 1}, {"id": 2, "satisfied": "false", "step": 1}]`, 3, ParseError{Line: 1, Item: 2, Field: "satisfied", Msg: `got the string "false"`}},
		{"number 1 is not true", `[{"id": 1, "satisfied": 1, "step": 1}]`, 3, ParseError{Line: 1, Item: 1, Field: "satisfied", Msg: "got the number 1"}},
		{"number 0 is not false", `[{"id": 1, "satisfied": 0, "step": 1}]`, 3, ParseError{Line: 1, Item: 1, Field: "satisfied", Msg: "got the number 0"}},
		{"step beyond the solution", `[{"id": 1, "satisfied": true, "step": 4}, {"id": 2, "satisfied": true, "step": 1}]`, 3, ParseError{Line: 1, Item: 1, Field: "step", Msg: "must be an integer from -1 to 3, got 4"}},
		{"step below -1", `[{"id": 1, "satisfied": true, "step": -2}]`, 3, ParseError{Line: 1, Item: 1, Field: "step", Msg: "got -2"}},
		{"step below -1, steps unknown", `[{"id": 1, "satisfied": true, "step": -2}]`, 0, ParseError{Line: 1, Item: 1, Field: "step", Msg: "must be an integer >= -1, got -2"}},
		{"step fraction", `[{"id": 1, "satisfied": true, "step": 1.5}]`, 3, ParseError{Line: 1, Item: 1, Field: "step", Msg: "got 1.5"}},
		{"step string", `[{"id": 1, "satisfied": true, "step": "2"}]`, 3, ParseError{Line: 1, Item: 1, Field: "step", Msg: `got the string "2"`}},
		{"step missing", `[{"id": 1, "satisfied": true}]`, 3, ParseError{Line: 1, Item: 1, Field: "step", Msg: "missing"}},
		{"duplicate", `[{"id": 1, "satisfied": true, "step": 1}, {"id": 1, "satisfied": true, "step": 1}]`, 3, ParseError{Line: 1, Item: 2, Field: "id", Msg: "appears twice"}},
		{"missing", `[{"id": 1, "satisfied": true, "step": 1}]`, 3, ParseError{Msg: "no verdict for id 2"}},
		{"unknown", `[{"id": 1, "satisfied": true, "step": 1}, {"id": 3, "satisfied": true, "step": 1}]`, 3, ParseError{Line: 1, Item: 2, Field: "id", Msg: "unknown id 3; the ids are 1, 2"}},
		{"truncated", "[{\"id\": 1, \"satisfied\": true, \"step\": 1},\n{\"id\": 2, \"satis", 3, ParseError{Line: 1, Msg: "never closed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSatisfaction(tt.in, ids, tt.steps)
			assertParseError(t, err, tt.want)
			if got != nil {
				t.Errorf("verdicts with the error: %+v", got)
			}
		})
	}
	in, err := os.ReadFile("testdata/judge/satisfy_string_bool.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseSatisfaction(string(in), []int32{1, 2, 3}, 5)
	assertParseError(t, err, ParseError{Line: 3, Item: 2, Field: "satisfied", Msg: `got the string "false"`})
}

func TestBatchCallerErrors(t *testing.T) {
	var pe *ParseError
	if _, err := ParseSatisfaction(`[]`, []int32{1, 1}, 0); err == nil || errors.As(err, &pe) {
		t.Errorf("ParseSatisfaction with duplicate ids: got %v, want a plain error", err)
	}
	if _, err := ParseValidityBatch(`[]`, []int32{2, 2}); err == nil || errors.As(err, &pe) {
		t.Errorf("ParseValidityBatch with duplicate ids: got %v, want a plain error", err)
	}
}

func TestDescribeIDs(t *testing.T) {
	tests := []struct {
		ids  []int32
		want string
	}{
		{nil, "none"},
		{[]int32{4}, "4"},
		{[]int32{2, 1}, "1, 2"},
		{[]int32{3, 1, 2, 4}, "1 to 4"},
		{[]int32{1, 3, 9}, "1, 3, 9"},
	}
	for _, tt := range tests {
		if got := describeIDs(tt.ids); got != tt.want {
			t.Errorf("describeIDs(%v) = %q, want %q", tt.ids, got, tt.want)
		}
	}
}

func BenchmarkParseSatisfaction(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("```json\n[\n")
	ids := make([]int32, 12)
	for i := range ids {
		ids[i] = int32(i + 1)
		if i > 0 {
			sb.WriteString(",\n")
		}
		fmt.Fprintf(&sb, `  {"id": %d, "satisfied": %v, "step": %d}`, i+1, i%2 == 0, i%5)
	}
	sb.WriteString("\n]\n```")
	in := sb.String()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := ParseSatisfaction(in, ids, 6); err != nil {
			b.Fatal(err)
		}
	}
}
