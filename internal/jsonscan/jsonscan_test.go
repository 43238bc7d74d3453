package jsonscan

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestUnquoteAgreesWithEncodingJSON(t *testing.T) {
	for _, lit := range []string{
		`""`, `"plain"`, `"tab\tnew\nline"`, `"quote \" slash \\ \/"`, `"\b\f\r"`,
		`"\u00e9t\u00E9"`, `"\u003cpassage\u003e"`, `"pair \ud83d\ude00"`, `"lone \ud800 high"`,
		`"lone \udc00 low"`, `"high then text \ud800x"`, `"high high \ud800\ud800"`, `"end \ud800"`,
		"\"bad \xff utf8\"", "\"cut \xe2\x82\"", `"日本語"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		got, ok := Unquote([]byte(lit))
		if !ok || got != want {
			t.Errorf("Unquote(%s) = %q, %v; encoding/json gives %q", lit, got, ok, want)
		}
	}
	for _, bad := range []string{``, `"`, `x`, `"\"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\nb\""} {
		if got, ok := Unquote([]byte(bad)); ok {
			t.Errorf("Unquote(%q) = %q, accepted", bad, got)
		}
	}
}

func TestEachMember(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // key, value, key, value...
		err  bool
	}{
		{in: `{}`},
		{in: ` { "A" : 1 , "b":[1, {"c": "]"}] ,"C":{"x":"}"} } `, want: []string{"A", `1`, "b", `[1, {"c": "]"}]`, "C", `{"x":"}"}`}},
		{in: `{"k\u0041y": "v\"w", "n": null, "t": true, "f": -1.5e3}`, want: []string{"kAy", `"v\"w"`, "n", `null`, "t", `true`, "f", `-1.5e3`}},
		{in: `{"a": 1, "a": 2}`, want: []string{"a", "1", "a", "2"}},
		{in: `[1]`, err: true},
		{in: `{"a": 1`, err: true},
		{in: `{"a" 1}`, err: true},
		{in: `{"a": 1 "b": 2}`, err: true},
		{in: `{a: 1}`, err: true},
	} {
		var got []string
		err := EachMember([]byte(tc.in), func(k string, v []byte) error {
			got = append(got, k, string(v))
			return nil
		})
		if (err != nil) != tc.err {
			t.Errorf("EachMember(%s) error %v, want error %v", tc.in, err, tc.err)
		}
		if !tc.err && !slices.Equal(got, tc.want) {
			t.Errorf("EachMember(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, in := range []string{
		``, ` `, `1`, `-0`, `-`, `01`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-1.5e+30`, `.5`, `+1`, `0x10`,
		`true`, `tru`, `truex`, `null`, `nul`, `false `, ` [ ] `, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a":1}`, `{"a" 1}`,
		`{"a":1,}`, `{a:1}`, `{"a":1}}`, `"\u00e9\ud800"`, `"\u00g9"`, `"\x"`, "\"a\tb\"", "\"\xff\xfe\"", `"\/\b\f\n\r\t\"\\"`,
		`[{"questions": [{"criteria": [{"weight": 1.5}]}]}]`, `{"a": [1, {"b": null}], "c": "]}"}`, `"abc`, `[`, `{"a":`,
		deep(10000), deep(10001), "[1]\x00", "\t\r\n[1]\n",
	} {
		if got, want := Valid(in), json.Valid([]byte(in)); got != want {
			t.Errorf("Valid(%.40q) = %v, json.Valid says %v", in, got, want)
		}
	}
}

// BenchmarkValid checks a synthesize reply (nested objects, arrays and
// strings) the way the parsers do before they walk it.
func BenchmarkValid(b *testing.B) {
	crit := `{"id": "c1", "weight": 5, "name": "Role of catalyst", "description": "The answer explains the role of catalyst.", ` +
		`"required_elements": ["catalyst", "catalyst in relation to \"appears\""], "expected_keywords": [], "expected_concepts": ["a", "b"]}`
	reply := `{"questions": [{"question": "How does catalyst interact?", "criteria": [` + strings.Repeat(crit+", ", 9) + crit + `]}]}`
	b.SetBytes(int64(len(reply)))
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			if !json.Valid([]byte(reply)) {
				b.Fatal("not valid")
			}
		}
	})
	b.Run("jsonscan.Valid", func(b *testing.B) {
		for b.Loop() {
			if !Valid(reply) {
				b.Fatal("not valid")
			}
		}
	})
}

func TestCountElements(t *testing.T) {
	for in, want := range map[string]int{`[]`: 0, ` [ 1 ] `: 1, `[{"a": [1, 2]}, "x,y", null]`: 3, `[1,`: -1, `{}`: -1, `[1 2]`: -1, ``: -1} {
		if got := CountElements([]byte(in)); got != want {
			t.Errorf("CountElements(%q) = %d, want %d", in, got, want)
		}
	}
}

// FuzzScan: on any input nothing panics or reads out of range, and on
// valid JSON strings and arrays split exactly as encoding/json decodes
// them (objects are checked against encoding/json's Decoder in schema's
// FuzzDecodeObject).
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"questions": [{"question": "q\n\"x\"", "criteria": [{"id": "c1", "weight": 1.5}]}]}`,
		`[{"id": 1, "valid": true}, {"id": 2, "valid": false, "reason": "]}"}]`,
		`"\ud83d\ude00 \ud800"`, "\"\xff\"", `[]`, `[1, "2", null, {"x": [true]}]`,
		`{"k": "v"`, `[1,,2]`, `{"a":}`, `"\`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := Valid(in), json.Valid(in); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", in, got, want)
		}
		if Valid(string(in)) != Valid(in) {
			t.Fatalf("Valid(%q) differs between string and []byte", in)
		}
		_, _ = Unquote(in)
		_ = CountElements(in)
		_ = EachMember(in, func(string, []byte) error { return nil })
		_, _ = valueEnd(in, 0)
		for p := range in {
			if in[p] != '"' {
				continue
			}
			gotEnd, gotErr := stringEnd(in, p)
			wantEnd, wantErr := stringEndByteByByte(in, p)
			if gotEnd != wantEnd || gotErr != wantErr {
				t.Fatalf("stringEnd(%q, %d) = %d, %v; byte by byte: %d, %v", in, p, gotEnd, gotErr, wantEnd, wantErr)
			}
		}
		if !json.Valid(in) {
			return
		}
		trimmed := bytes.TrimSpace(in)
		switch trimmed[0] {
		case '"':
			var want string
			_ = json.Unmarshal(in, &want)
			if got, ok := Unquote(trimmed); !ok || got != want {
				t.Fatalf("Unquote(%q) = %q, %v; encoding/json gives %q", trimmed, got, ok, want)
			}
		case '[':
			var want []json.RawMessage
			_ = json.Unmarshal(in, &want)
			var got []json.RawMessage
			if err := EachElement(in, func(e []byte, at int) error {
				if !bytes.HasPrefix(in[at:], e) {
					t.Fatalf("EachElement(%q): element %q is not at %d", in, e, at)
				}
				got = append(got, e)
				return nil
			}); err != nil {
				t.Fatalf("EachElement(%q): %v", in, err)
			}
			if !slices.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("EachElement(%q) = %q, encoding/json gives %q", in, got, want)
			}
		}
	})
}

// BenchmarkUnquote decodes a prompt as go-openai sends it: newlines, quotes
// and the \u003c \u003e escapes of the template's tags.
func BenchmarkUnquote(b *testing.B) {
	text := strings.Repeat("<passage title=\"Heat pipes\">\nA heat pipe carries heat by evaporating a working fluid at the hot end, "+
		"and the wick returns the condensate by capillary action (σ ≈ 0.07 N/m).\n</passage>\n", 20)
	lit, err := json.Marshal(text)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(lit)))
	b.ReportAllocs()
	for b.Loop() {
		if s, ok := Unquote(lit); !ok || len(s) != len(text) {
			b.Fatal("Unquote failed")
		}
	}
}

// stringEndByteByByte is stringEnd as it was written first: the reference
// FuzzScan holds the faster one to.
func stringEndByteByByte(b []byte, p int) (int, error) {
	for p++; p < len(b); p++ {
		switch b[p] {
		case '\\':
			p++
		case '"':
			return p + 1, nil
		}
	}
	return len(b), ErrNotJSON
}

// BenchmarkStringEnd finds the end of a prompt's string literal as
// go-openai and the client write it (newlines, quotes, \u003c escapes), and
// of a reply's content that is JSON itself (an escaped quote every few
// bytes: a grounded synthesis reply of make bench-scale-grounded).
func BenchmarkStringEnd(b *testing.B) {
	prompt := strings.Repeat("<passage title=\"Heat pipes\">\nA heat pipe carries heat by evaporating a working fluid at the hot end, "+
		"and the wick returns the condensate by capillary action (σ ≈ 0.07 N/m).\n</passage>\n", 20)
	reply, err := os.ReadFile("../../schema/testdata/grounded/questions.txt")
	if err != nil {
		b.Fatal(err)
	}
	for _, text := range []struct{ name, s string }{{"prompt", prompt}, {"json-reply", string(reply)}} {
		lit, err := json.Marshal(text.s)
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []struct {
			name string
			end  func([]byte, int) (int, error)
		}{{"byte-by-byte", stringEndByteByByte}, {"stringEnd", stringEnd}} {
			b.Run(text.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(lit)))
				for b.Loop() {
					if end, err := impl.end(lit, 0); err != nil || end != len(lit) {
						b.Fatal("stringEnd failed")
					}
				}
			})
		}
	}
}

// TestElements: every element read in order; anything but an array, or an
// element the reader refuses, is false.
func TestElements(t *testing.T) {
	readInt := func(e []byte) (string, bool) { return string(e), len(e) > 0 && e[0] >= '0' && e[0] <= '9' }
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{`[]`, []string{}, true},
		{` [1, 22 ,3]`, []string{"1", "22", "3"}, true},
		{`[1, "x"]`, nil, false},
		{`{"a": 1}`, nil, false},
		{``, nil, false},
	}
	for _, tt := range tests {
		got, ok := Elements([]byte(tt.in), readInt)
		if ok != tt.ok || ok && !slices.Equal(got, tt.want) {
			t.Errorf("Elements(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestFoldsTo: encoding/json's case-insensitive key match, including the
// Unicode folds (the Kelvin sign folds to k, the long s to s).
func TestFoldsTo(t *testing.T) {
	for _, key := range []string{"Choices", "CHOICES", "choi\u017fes", "usage", "\u212aey"} {
		var v struct {
			Choices int
			Usage   int
			Key     int
		}
		if err := json.Unmarshal([]byte(`{"`+key+`": 1}`), &v); err != nil {
			t.Fatal(err)
		}
		matched := v.Choices+v.Usage+v.Key == 1
		if got := FoldsTo(key, "choices", "usage", "key"); got != matched {
			t.Errorf("FoldsTo(%q) = %v, encoding/json matched: %v", key, got, matched)
		}
	}
	if FoldsTo("model", "messages") {
		t.Error("FoldsTo(model, messages) = true")
	}
}
