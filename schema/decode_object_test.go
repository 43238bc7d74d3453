package schema

import (
	"bytes"
	"encoding/json"
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
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"K2":0}`, nil, `field "K2": the key is given twice`},
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
		for _, m := range o.fields {
			got[m.key] = string(m.val)
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

// FuzzDecodeObject: on valid JSON objects decodeObject (over
// internal/jsonscan) gives the members and the errors the Decoder-based
// decodeObject gave.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{"questions": [{"question": "q\n\"x\"", "criteria": [{"id": "c1", "weight": 1.5}]}]}`,
		`{"A": 1, "a": 2}`, `{}`, `{"k\u0041": {"x": [true, null]}, "B": "\ud800"}`, `{"k": "v"`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"K3":0}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = decodeObject(in, 0, 0)
		if !json.Valid(in) || bytes.TrimSpace(in)[0] != '{' {
			return
		}
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
			if got, _ := o.fields.get(k); !bytes.Equal(got, v) {
				t.Fatalf("decodeObject(%q)[%q] = %q, the Decoder gives %q", in, k, got, v)
			}
		}
	})
}
