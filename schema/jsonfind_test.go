package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		open byte
		want string
	}{
		{"bare array", `[1, 2]`, '[', `[1, 2]`},
		{"bare object", `{"valid": true}`, '{', `{"valid": true}`},
		{"prose around", "Sure, here it is: [{\"a\": 1}] Hope that helps.", '[', `[{"a": 1}]`},
		{"json fence", "```json\n[\n  {\"id\": 1}\n]\n```", '[', "[\n  {\"id\": 1}\n]"},
		{"brackets inside strings", `[{"t": "a ] b [ c } {"}]`, '[', `[{"t": "a ] b [ c } {"}]`},
		{"escaped quote inside string", `[{"t": "say \"]\" now"}]`, '[', `[{"t": "say \"]\" now"}]`},
		{"escaped backslash before quote", `[{"t": "c:\\"}, 2]`, '[', `[{"t": "c:\\"}, 2]`},
		{"skips a non-JSON bracket", "See [1] and [note]. Answer: [3, 4]", '[', `[1]`},
		{"skips invalid, takes next", "Items [a, b] then [3, 4]", '[', `[3, 4]`},
		{"nested: outer invalid, inner valid", "[x, [1, 2]]", '[', `[1, 2]`},
		{"quote in prose before the JSON", `The 5" pipe: [1, 2]`, '[', `[1, 2]`},
		{"bracket inside prose quote", `Use "the [x] notation". Answer: [1,2]`, '[', `[1,2]`},
		{"unclosed outer, balanced inner", "[ [1] and more", '[', `[1]`},
		{"object inside array", `[{"valid": false, "reason": "x"}]`, '{', `{"valid": false, "reason": "x"}`},
		{"think block skipped", "<think>[\"draft\"]</think> final: [\"real\"]", '[', `["real"]`},
		{"unicode", `Résumé: ["√2 ≈ 1.414"]`, '[', `["√2 ≈ 1.414"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractJSON(tt.in, tt.open)
			if err != nil {
				t.Fatalf("ExtractJSON: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExtractJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		open byte
		want ParseError
	}{
		{"nothing", "I cannot help with that.", '[', ParseError{Msg: "no JSON array"}},
		{"no object", "[1]", '{', ParseError{Msg: "no JSON object"}},
		{"truncated", "```json\n[\n  {\"id\": 1, \"satisfied\": tr", '[', ParseError{Line: 2, Msg: "never closed"}},
		{"wrong bracket", "[\n{\"a\": 1]\n", '[', ParseError{Line: 2, Msg: "closed by the wrong bracket ']'"}},
		{"trailing comma", "[\n  {\"a\": 1},\n]", '[', ParseError{Line: 3, Msg: "not valid JSON"}},
		{"single quotes", "{'valid': true}", '{', ParseError{Line: 1, Msg: "not valid JSON"}},
		{"longest failure reported", "[note]\n\n[{\"id\": 1},\n {\"id\": 2},]", '[', ParseError{Line: 4, Msg: "not valid JSON"}},
		{"truncated after a note", "[note]\n[{\"id\": 1", '[', ParseError{Line: 2, Msg: "never closed"}},
		{"unclosed think", "<think>\n[1]", '[', ParseError{Line: 1, Msg: "never closed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractJSON(tt.in, tt.open)
			assertParseError(t, err, tt.want)
			if got != "" {
				t.Errorf("got %q with the error", got)
			}
		})
	}
}

func TestExtractJSONBadOpen(t *testing.T) {
	_, err := ExtractJSON("(1)", '(')
	var pe *ParseError
	if err == nil || errors.As(err, &pe) {
		t.Fatalf("got %v, want a plain error", err)
	}
}

// TestExtractJSONPathological makes sure inputs that defeat a naive
// candidate-by-candidate scan still cost time linear in their length. The
// cost is the scanner's own deterministic count of the bytes it examines
// (scanJSONWork), not wall time, so a loaded machine cannot fail it.
//
// The bound: the candidate loop steps over each byte once; bracket scans
// start only at openers no earlier scan matched, so together they walk each
// byte at most once; with no accept function the first valid span ends the
// search, so it is read once; an invalid span is read (by jsonscan.Valid,
// then json.Unmarshal, then openAt) only up to its fault, and every opener
// before the fault is either skipped or starts a span that is valid, so the
// invalid prefixes read do not overlap. That is at most 6 reads of each
// byte. A quadratic regression (re-validating from each opener to the end,
// rescanning brackets from each opener) costs about n/2 reads of each byte,
// thousands of times the bound at n = 12000.
func TestExtractJSONPathological(t *testing.T) {
	t.Parallel()
	const n = 12000 // deeper than encoding/json's limit of 10000
	const readsPerByte = 6
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"nesting deeper than encoding/json allows", strings.Repeat("[", n) + "1" + strings.Repeat("]", n), true},
		{"unclosed nesting", strings.Repeat("[", n), false},
		{"nested, fault deep inside", strings.Repeat("[", n/4) + "x" + strings.Repeat("]", n/4), false},
		{"nested, fault at each level", strings.Repeat("[x,", n/4) + strings.Repeat("]", n/4), false},
		{"many small invalid spans", strings.Repeat("[x] ", n), false},
		{"many openers in prose quotes", strings.Repeat(`"[ `, n), false},
		{"valid after much noise", strings.Repeat("[x] ", n) + "[1]", true},
		{"valid after unclosed noise", strings.Repeat("[x ", n) + "[1]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := newReply(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			work := 0 // ExtractJSON's own scan: no accept, stop at the first span
			err = scanJSONWork(r, '[', nil, func(string, int) bool { return false }, nil, &work)
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok=%v", err, tt.ok)
			}
			if limit := readsPerByte * len(r.body); work > limit {
				t.Errorf("examined %d bytes of a %d-byte reply, want at most %d (%d per byte): the scan is no longer linear",
					work, len(r.body), limit, readsPerByte)
			}
			t.Logf("examined %d bytes of %d (%.2f per byte)", work, len(r.body), float64(work)/float64(len(r.body)))
		})
	}
}

func BenchmarkExtractJSON(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("Here is my evaluation [see notes]:\n```json\n[\n")
	for i := range 40 {
		if i > 0 {
			sb.WriteString(",\n")
		}
		sb.WriteString(`  {"id": 1, "satisfied": true, "step": 3, "reason": "uses [a, b] and {c}"}`)
	}
	sb.WriteString("\n]\n```\n")
	in := sb.String()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := ExtractJSON(in, '['); err != nil {
			b.Fatal(err)
		}
	}
}
