package server

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// groupBodies are /v1/score_group bodies the fast decoder must read as
// encoding/json does (fast) or leave to it (not fast).
var groupBodies = []struct {
	body string
	fast bool
}{
	{`{}`, true},
	{` { } `, true},
	{`{"responses": []}`, true},
	{`{"responses": ["a", "b"], "problem_id": "p", "scheme": "srar", "request_id": "r", "question": "q"}`, true},
	{"{\"responses\":[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"\\u00e9\\u20AC\\ud83d\\ude00\",\"é€😀\"]}", true},
	{`{"responses": ["a\u0000b", ""], "extra": {"x": [1, 2, {"y": "}]"}], "z": null}, "n": -1.5e3}`, true},
	{`{"prompt": [{"role": "user", "content": "q"}], "label": "{\"rubric\": []}", "responses": ["a"]}`, true},
	{`{"prompt": "p", "label": {"id": "x"}, "responses": ["a"], "other": true}`, true},
	{`{"prompt": null, "label": null, "responses": ["a"]}`, true},
	{"\t{\"responses\"\n:\r[ \"a\" , \"b\" ]\n}\n", true},

	{``, false},
	{`null`, false},
	{`[]`, false},
	{`"x"`, false},
	{`{`, false},
	{`{"responses": ["a"]`, false},
	{`{"responses": ["a"]} x`, false},
	{`{"responses": ["a"]}{}`, false},
	{`{"responses": ["a",]}`, false},
	{`{"responses": ["a" "b"]}`, false},
	{`{"responses": ["a"],}`, false},
	{`{"responses": null}`, false},
	{`{"responses": ["a", null]}`, false},
	{`{"responses": ["a", 1]}`, false},
	{`{"responses": "a"}`, false},
	{`{"responses": ["a"], "responses": ["b"]}`, false},
	{`{"Responses": ["a"]}`, false},
	{`{"PROBLEM_ID": "p", "responses": ["a"]}`, false},
	{`{"re\u0073ponses": ["a"]}`, false},
	{`{"problem_id": 1, "responses": ["a"]}`, false},
	{`{"problem_id": null, "responses": ["a"]}`, false},
	{`{"responses": ["\ud83d"]}`, false},
	{`{"responses": ["\ud83dx"]}`, false},
	{`{"responses": ["\ud83d\u0041"]}`, false},
	{`{"responses": ["\ud83d \ude00"]}`, false},
	{`{"responses": ["\ud83d\\ude00"]}`, false},
	{`{"responses": ["\ude00\ud83d"]}`, false},
	{`{"responses": ["\x"]}`, false},
	{`{"responses": ["\u12"]}`, false},
	{"{\"responses\": [\"a\nb\"]}", false},
	{"{\"responses\": [\"\xff\"]}", false},
	{`{"label": {"x": }, "responses": ["a"]}`, false},
	{`{"label": tru, "responses": ["a"]}`, false},
	{`{"label": tru"e", "responses": ["a"]}`, false},
	{`{"label": {"a": 1}}}`, false},
	{`{"other": [1, 2}`, false},
	{`{"other": 01}`, false},
}

func TestFastGroup(t *testing.T) {
	t.Parallel()
	for _, c := range groupBodies {
		var fast groupRequest
		if got := fastGroup([]byte(c.body), &fast, new(groupScratch)); got != c.fast {
			t.Errorf("fastGroup(%q) = %v, want %v", c.body, got, c.fast)
			continue
		}
		if c.fast {
			checkLikeEncodingJSON(t, c.body, fast)
		}
	}
}

// checkLikeEncodingJSON fails t unless encoding/json decodes body into fast.
func checkLikeEncodingJSON(t *testing.T, body string, fast groupRequest) {
	t.Helper()
	var want groupRequest
	if err := json.Unmarshal([]byte(body), &want); err != nil {
		t.Fatalf("fastGroup accepted %q, which encoding/json rejects: %v", body, err)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("fastGroup(%q):\n got %#v\nwant %#v", body, fast, want)
	}
}

// TestFastGroupViews: the responses are views of the scratch buffer, which
// the next body reuses.
func TestFastGroupViews(t *testing.T) {
	t.Parallel()
	sc := new(groupScratch)
	var a, b groupRequest
	if !fastGroup([]byte(`{"responses": ["first", "", "second"]}`), &a, sc) {
		t.Fatal("not decoded")
	}
	if got := strings.Join(a.Responses, ","); got != "first,,second" {
		t.Fatalf("got %q", got)
	}
	if !fastGroup([]byte(`{"responses": ["XXXXX", "", "YYYYYY"]}`), &b, sc) {
		t.Fatal("not decoded")
	}
	if got := strings.Join(a.Responses, ","); got != "XXXXX,,YYYYYY" {
		t.Fatalf("the first responses are not views of the reused scratch: %q", got)
	}
}

// TestPlainRun: the eight-byte scan stops where a byte at a time does.
func TestPlainRun(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	special := []byte{'"', '\\', 0, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xff, 'a'}
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = 'a' + byte(rng.IntN(26))
			if rng.IntN(12) == 0 {
				b[i] = special[rng.IntN(len(special))]
			}
		}
		start := rng.IntN(len(b) + 1)
		want := start
		for want < len(b) && b[want] >= 0x20 && b[want] < 0x80 && b[want] != '"' && b[want] != '\\' {
			want++
		}
		if got := plainRun(b, start); got != want {
			t.Fatalf("plainRun(%q, %d) = %d, want %d", b, start, got, want)
		}
	}
}

// TestFastGroupPieces: bodies built from pieces of escapes, surrogates,
// white space and odd bytes decode, when the fast decoder takes them, as
// encoding/json decodes them.
func TestFastGroupPieces(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	pieces := []string{"a", " ", "\t", `\n`, `\\`, `\"`, `\/`, `\u`, "d83d", "de00", "00e9", "D83D", `\ud83d`, `\ude00`,
		"é", "\xff", "\x01", `"`, ",", "[", "]", "{", "}", ":", `"responses"`, `"scheme"`, "null", "1"}
	for range 30000 {
		var b strings.Builder
		b.WriteString(`{"responses": ["`)
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		b.WriteString(`"]}`)
		var fast groupRequest
		if fastGroup([]byte(b.String()), &fast, new(groupScratch)) {
			checkLikeEncodingJSON(t, b.String(), fast)
		}
	}
}
