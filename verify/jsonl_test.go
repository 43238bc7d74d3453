package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
)

// TestVerifyJSONLGolden runs both modes over testdata/jsonl/*.jsonl and compares the output
// with the .golden files (go test -run JSONLGolden -update rewrites them).
func TestVerifyJSONLGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		extract bool
		bad     []int
		lines   int
		equal   int
	}{
		{"compare.jsonl", false, []int{4, 5, 6, 7, 8}, 11, 4},
		{"extract.jsonl", true, []int{4}, 6, 4},
	}
	for _, tt := range tests {
		in, err := os.ReadFile("testdata/jsonl/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		var bad []int
		st, err := VerifyJSONL(bytes.NewReader(in), &out, JSONLOptions{Extract: tt.extract, BadLine: func(line int, err error) {
			bad = append(bad, line)
		}})
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if !reflect.DeepEqual(bad, tt.bad) || st.Bad != len(tt.bad) || st.Lines != tt.lines || st.Equal != tt.equal {
			t.Errorf("%s: bad lines %v, stats %+v; want bad %v, %d lines, %d equal", tt.file, bad, st, tt.bad, tt.lines, tt.equal)
		}
		if n := strings.Count(out.String(), "\n"); n != tt.lines {
			t.Errorf("%s: %d output lines for %d input lines", tt.file, n, tt.lines)
		}
		golden.Check(t, "testdata/jsonl/"+strings.TrimSuffix(tt.file, ".jsonl")+".golden", out.Bytes())
	}
}

// TestVerifyJSONLLines pins the per-line contract: fields, ids copied as written, bad lines
// reported in place, long lines skipped without losing the next one.
func TestVerifyJSONLLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		opt      JSONLOptions
		want     []string
	}{
		{"id number and text", `{"id":7,"gold":"1/2","pred":"0.5"}` + "\n" + `{"id":"x","gold":"2","pred":"3"}`, JSONLOptions{},
			[]string{`{"id":7,"equal":true,"method":"numeric","gold_norm":"1/2","pred_norm":"0.5"}`,
				`{"id":"x","equal":false,"method":"numeric","gold_norm":"2","pred_norm":"3"}`}},
		{"no id, null id", `{"gold":"A","pred":"(A)"}` + "\n" + `{"id":null,"gold":"A","pred":"B"}`, JSONLOptions{},
			[]string{`{"equal":true,"method":"choice","gold_norm":"A","pred_norm":"(A)"}`,
				`{"equal":false,"method":"choice","gold_norm":"A","pred_norm":"B"}`}},
		{"numbers are read as written", `{"gold":1e3,"pred":"1000"}`, JSONLOptions{},
			[]string{`{"equal":true,"method":"numeric","gold_norm":"1e3","pred_norm":"1000"}`}},
		{"last sentence is its own method", `{"gold":"12","pred":"So she has 12 apples left."}`, JSONLOptions{},
			[]string{`{"equal":true,"method":"last_sentence","gold_norm":"12","pred_norm":"12"}`}},
		{"bad lines keep the alignment", "{\"gold\":\"1\"}\n{}\n{\"gold\":[1],\"pred\":\"1\"}\n{\"gold\":\"1\",\"pred\":\"1\"}", JSONLOptions{},
			[]string{`{"line":1,"error":"missing field \"pred\""}`, `{"line":2,"error":"missing field \"gold\""}`,
				`{"line":3,"error":"field \"gold\" must be a string or a number"}`,
				`{"equal":true,"method":"exact","gold_norm":"1","pred_norm":"1"}`}},
		{"long line", `{"gold":"1","pred":"` + strings.Repeat("1", 100) + `"}` + "\n" + `{"gold":"1","pred":"1"}`, JSONLOptions{MaxLineBytes: 50},
			[]string{`{"line":1,"error":"line longer than 50 bytes"}`, `{"equal":true,"method":"exact","gold_norm":"1","pred_norm":"1"}`}},
		{"invalid utf-8", "{\"gold\":\"\xff\",\"pred\":\"1\"}", JSONLOptions{},
			[]string{`{"line":1,"error":"not valid UTF-8"}`}},
		{"extract", `{"id":1,"text":"The answer is \\boxed{5}."}` + "\n" + `{"id":2,"text":"Hmm."}`, JSONLOptions{Extract: true},
			[]string{`{"id":1,"answer":"5","ok":true,"method":"boxed"}`, `{"id":2,"answer":"","ok":false,"method":""}`}},
		{"finish_reason decides a cut-off", `{"id":1,"gold":"126","pred":"So the total cost is $126.","finish_reason":"length"}` + "\n" +
			`{"id":2,"gold":"126","pred":"Tom spent 126 dollars on clothes","finish_reason":"stop"}` + "\n" +
			`{"id":3,"gold":"126","pred":"So the total cost is $126.","finish_reason":null}`, JSONLOptions{},
			[]string{`{"id":1,"equal":false,"method":"none","gold_norm":"126","pred_norm":""}`,
				`{"id":2,"equal":true,"method":"last_sentence","gold_norm":"126","pred_norm":"126"}`,
				`{"id":3,"equal":true,"method":"last_sentence","gold_norm":"126","pred_norm":"126"}`}},
		{"finish_reason in extract mode", `{"id":1,"text":"The answer is \\boxed{5}.","finish_reason":"length"}` + "\n" +
			`{"id":2,"text":"The answer is \\boxed{5}.","finish_reason":"stop"}` + "\n" +
			`{"id":3,"text":"The answer is \\boxed{5}.","finish_reason":5}`, JSONLOptions{Extract: true},
			[]string{`{"id":1,"answer":"","ok":false,"method":""}`, `{"id":2,"answer":"5","ok":true,"method":"boxed"}`,
				`{"line":3,"error":"field \"finish_reason\" must be a string"}`}},
		{"backslashes in the output", `{"gold":"\\\\frac{1}{2}","pred":"1/2"}`, JSONLOptions{},
			[]string{`{"equal":true,"method":"numeric","gold_norm":"\\frac{1}{2}","pred_norm":"1/2"}`}},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if _, err := VerifyJSONL(strings.NewReader(tt.in), &out, tt.opt); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// TestVerifyJSONLIOErrors checks that read and write failures come back wrapped, naming the line.
func TestVerifyJSONLIOErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk gone")
	_, err := VerifyJSONL(&failingReader{data: `{"gold":"1","pred":"1"}` + "\n", err: boom}, io.Discard, JSONLOptions{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "read line 2") {
		t.Errorf("read failure: got %v, want it wrapped with the line number", err)
	}
	in := strings.Repeat(`{"gold":"1","pred":"1"}`+"\n", 5000)
	_, err = VerifyJSONL(strings.NewReader(in), failingWriter{boom}, JSONLOptions{})
	if !errors.Is(err, boom) {
		t.Errorf("write failure: got %v, want it wrapped", err)
	}
}

// TestAppendJSONString checks the output encoder against encoding/json on awkward strings.
func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `q"uote\back`, "\x00\x01\x1f\x7f", "tab\tnl\ncr\r", "\u2028\u2029", "日本語 ✓", "bad \xff\xfe utf8", "<&>"} {
		var back string
		enc := appendJSONString(nil, s)
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Errorf("appendJSONString(%q) = %s: not JSON: %v", s, enc, err)
			continue
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); back != want && !(strings.Contains(s, "\xff") && back == strings.ReplaceAll(s, "\xff\xfe", "\ufffd\ufffd")) {
			t.Errorf("appendJSONString(%q) decodes to %q", s, back)
		}
	}
}

// jsonlInput builds n typical input lines from typicalPairs.
func jsonlInput(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		p := typicalPairs[i%len(typicalPairs)]
		g, _ := json.Marshal(p[0])
		q, _ := json.Marshal(p[1])
		fmt.Fprintf(&b, `{"id":%d,"gold":%s,"pred":%s}`+"\n", i, g, q)
	}
	return b.Bytes()
}

// BenchmarkVerifyJSONL reports input lines per second (and per CPU second) of the distill
// verify path, on one goroutine: JSON decoding, Compare and JSON encoding of typical answers.
func BenchmarkVerifyJSONL(b *testing.B) {
	in := jsonlInput(10000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	lines := 0
	cpu0 := processCPU()
	for b.Loop() {
		st, err := VerifyJSONL(bytes.NewReader(in), io.Discard, JSONLOptions{})
		if err != nil || st.Bad != 0 {
			b.Fatalf("%v, %+v", err, st)
		}
		lines += st.Lines
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(lines)/cpu.Seconds(), "lines/cpu-s")
	}
}
