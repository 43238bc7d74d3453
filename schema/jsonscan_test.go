package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// decodeObjectWithDecoder is decodeObject as it was written over
// encoding/json's Decoder: the reference the scanner must agree with.
func decodeObjectWithDecoder(raw []byte) (map[string]json.RawMessage, error) {
	fields := make(map[string]json.RawMessage)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		lk := strings.ToLower(tok.(string))
		if _, dup := fields[lk]; dup {
			return nil, parseErr(0, 0, tok.(string), "the key is given twice")
		}
		fields[lk] = v
	}
	return fields, nil
}

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
		got, ok := unquote([]byte(lit))
		if !ok || got != want {
			t.Errorf("unquote(%s) = %q, %v; encoding/json gives %q", lit, got, ok, want)
		}
	}
	for _, bad := range []string{``, `"`, `x`, `"\"`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\nb\""} {
		if got, ok := unquote([]byte(bad)); ok {
			t.Errorf("unquote(%q) = %q, accepted", bad, got)
		}
	}
}

func TestDecodeObjectMembers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{`{}`, map[string]string{}, ""},
		{` { "A" : 1 , "b":[1, {"c": "]"}] ,"C":{"x":"}"} } `, map[string]string{"a": `1`, "b": `[1, {"c": "]"}]`, "c": `{"x":"}"}`}, ""},
		{`{"k\u0041y": "v\"w", "n": null, "t": true, "f": -1.5e3}`, map[string]string{"kay": `"v\"w"`, "n": `null`, "t": `true`, "f": `-1.5e3`}, ""},
		{`{"id": 1, "ID": 2}`, nil, `field "ID": the key is given twice`},
		{`[1]`, nil, `expected a JSON object`},
		{`{"a": 1`, nil, `reading a JSON object: not valid JSON`},
		{`{"a" 1}`, nil, `reading a JSON object: not valid JSON`},
	} {
		o, err := decodeObject([]byte(tc.in), 0, 0)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("decodeObject(%s) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("decodeObject(%s): %v", tc.in, err)
			continue
		}
		got := map[string]string{}
		for k, v := range o.fields {
			got[k] = string(v)
		}
		if !mapsEqual(got, tc.want) {
			t.Errorf("decodeObject(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FuzzJSONScan: on any input the scanner neither panics nor reads out of
// range, and on valid JSON it splits objects, arrays and strings exactly as
// encoding/json does.
func FuzzJSONScan(f *testing.F) {
	for _, s := range []string{
		`{"questions": [{"question": "q\n\"x\"", "criteria": [{"id": "c1", "weight": 1.5}]}]}`,
		`[{"id": 1, "valid": true}, {"id": 2, "valid": false, "reason": "]}"}]`,
		`{"A": 1, "a": 2}`, `"\ud83d\ude00 \ud800"`, "\"\xff\"", `[]`, `{}`, `[1, "2", null, {"x": [true]}]`,
		`{"k": "v"`, `[1,,2]`, `{"a":}`, `"\`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = unquote(in)
		_ = countElements(in)
		_ = eachMember(in, func(string, []byte) error { return nil })
		_, _ = valueEnd(in, 0)
		if !json.Valid(in) {
			return
		}
		trimmed := bytes.TrimSpace(in)
		switch trimmed[0] {
		case '"':
			var want string
			_ = json.Unmarshal(in, &want)
			if got, ok := unquote(trimmed); !ok || got != want {
				t.Fatalf("unquote(%q) = %q, %v; encoding/json gives %q", trimmed, got, ok, want)
			}
		case '[':
			var want []json.RawMessage
			_ = json.Unmarshal(in, &want)
			var got []json.RawMessage
			if err := eachElement(in, func(e []byte, _ int) error { got = append(got, e); return nil }); err != nil {
				t.Fatalf("eachElement(%q): %v", in, err)
			}
			if !slices.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("eachElement(%q) = %q, encoding/json gives %q", in, got, want)
			}
		case '{':
			want, werr := decodeObjectWithDecoder(in)
			o, err := decodeObject(in, 0, 0)
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
				t.Fatalf("decodeObject(%q) error %v, the Decoder gives %v", in, err, werr)
			}
			if err != nil {
				return
			}
			if len(o.fields) != len(want) {
				t.Fatalf("decodeObject(%q) has %d keys, the Decoder %d", in, len(o.fields), len(want))
			}
			for k, v := range want {
				if !bytes.Equal(o.fields[k], v) {
					t.Fatalf("decodeObject(%q)[%q] = %q, the Decoder gives %q", in, k, o.fields[k], v)
				}
			}
		}
	})
}
