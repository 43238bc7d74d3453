package source

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/rubricforge/rubricforge/job"
)

// decodedValues is what jsonValues gave before it walked lines with
// jsonscan: every line decoded by encoding/json into a map of raw values,
// each field then decoded as a string, or else as a number.
func decodedValues(raw []byte, in Spec) (map[string]string, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, "not a JSON object: " + err.Error()
	}
	vals := map[string]string{}
	for _, fd := range in.fieldList() {
		v, ok := obj[fd.name]
		switch {
		case fd.name == "":
		case !ok || string(v) == "null":
			if fd.required {
				return nil, fmt.Sprintf("missing field %q", fd.name)
			}
		default:
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				var n json.Number
				if err := json.Unmarshal(v, &n); err != nil {
					return nil, fmt.Sprintf("field %q is not a string or number", fd.name)
				}
				if fd.textOnly {
					return nil, fmt.Sprintf("field %q is a number (%s), not a document's text", fd.name, n.String())
				}
				s = n.String()
			}
			vals[fd.key] = s
			continue
		}
		vals[fd.key] = ""
	}
	return vals, ""
}

// FuzzJSONValuesMatchesEncodingJSON: the one-pass reading of an input line
// gives exactly the fields, or the message, that encoding/json's decoding
// gave, for problems and for documents.
func FuzzJSONValuesMatchesEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"problem": "What is 1+1?", "answer": "2"}`,
		`{"problem": "p", "answer": 3.5e2, "id": "x-1", "source": "s", "solution": "r"}`,
		`{"problem": "a", "problem": "b", "answer": -0}`,
		`{"pro\u0062lem": "esc\"aped \u00e9 \ud83d\ude00", "answer": "\ud800"}`,
		`{"problem": null, "answer": "2"}`,
		`{"problem": ["a"], "answer": "2"}`,
		`{"problem": true, "answer": {}}`,
		`{"text": "# Title\n\nbody", "title": "T", "id": 7}`,
		`{"text": "x"} trailing`, ` {"text" : "y" , "id" : null } `,
		"{\"problem\": \"\xff\", \"answer\": \"1\"}",
		`[1,2]`, `"str"`, `{`, ``, `{"answer": 01}`,
	} {
		f.Add(seed)
	}
	problems := Spec{Input: job.DefaultJob().Input}
	docs := problems
	docs.docs.on = true
	docs.Fields.Text, docs.Fields.Title = "text", "title"
	f.Fuzz(func(t *testing.T, line string) {
		for _, in := range []Spec{problems, docs} {
			got, gotMsg := jsonValues([]byte(line), in)
			if gotMsg == "not valid UTF-8" {
				continue
			}
			want, wantMsg := decodedValues([]byte(line), in)
			if gotMsg != wantMsg || !maps.Equal(got, want) {
				t.Fatalf("%q (documents %v):\n got %q %q\nwant %q %q", line, in.docs.on, got, gotMsg, want, wantMsg)
			}
		}
	})
}
