package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// fuzzSeeds are bodies every decoder is fuzzed from: valid requests of each
// protocol and near misses.
func fuzzSeeds(t testing.TB) []string {
	lab := labelJSON(t, rewardtest.DemoLabel())
	return []string{
		``, `{`, `null`, `[]`, `"x"`, `{}`, `{"items": null}`, `{"items": [{}]}`,
		`{"items": [{"problem_id": "sum-2-3", "response": "### Step 1: a\n<answer>5</answer>"}]}`,
		`{"items": [{"label": ` + lab + `, "response": "r", "prompt": [{"role": "user", "content": "q"}], "scheme": "rlcer"}]}`,
		`{"items": [{"label": ` + mustJSON(t, lab) + `, "response": "r"}], "scheme": "papo"}`,
		`{"problem_id": "sum-2-3", "responses": ["a", "b"], "scheme": "srar"}`,
		`{"query": ["<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nr<|im_end|>"], "prompts": ["<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"], "labels": [""]}`,
		`{"query": ["a"], "labels": [` + mustJSON(t, lab) + `]}`,
		`{"prompt": "p", "response": "r", "label": ` + mustJSON(t, lab) + `}`,
		`{"prompt": [{"role": "user", "content": 1}], "response": "r"}`,
		`{"items": [{"response": "r", "label": "{\"rubric\": [{\"id\": 1, \"type\": \"SUGGEST\", \"text\": \"t\", \"weight\": 1e999}]}"}]}`,
		`{"items": [{"problem_id": "r-q0", "response": "r", "label": {"id": "r-q0", "scheme": "grounded", "rubric": [{"id": "c1", "weight": 2}]}}]}`,
		`{"items": [{"response": "r", "label": "{\"id\": 7, \"scheme\": \"best\", \"rubric\": 1}"}]}`,
	}
}

// checkDecoded asserts a decoder either accepted the body or rejected it
// with a badRequest, and that what it accepted is usable.
func checkDecoded(t *testing.T, err error, items ...scoreItem) {
	t.Helper()
	if err != nil {
		if _, ok := err.(*badRequest); !ok {
			t.Fatalf("a decoder error is not a bad request: %T %v", err, err)
		}
		if err.Error() == "" {
			t.Fatal("an empty error message")
		}
		return
	}
	for _, it := range items {
		if it.label != nil && len(it.label.Rubric) == 0 && it.label.Grounded == nil {
			t.Fatalf("an accepted label without items: %+v", it.label)
		}
		if b := it.badLabel; b != nil && (b.reason == "" || b.scheme != "" && checkScheme(b.scheme, "x") != nil || it.label != nil) {
			t.Fatalf("an unusable label without a reason, with a bad scheme or beside a label: %+v", b)
		}
		if it.scheme != "" {
			if err := checkScheme(it.scheme, "x"); err != nil {
				t.Fatalf("an accepted item with a bad scheme: %v", err)
			}
		}
	}
}

func FuzzDecodeScore(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		items, err := decodeScore([]byte(body))
		checkDecoded(t, err, items...)
		if err == nil && len(items) > MaxItems { // an empty list is answered with an empty list
			t.Fatalf("accepted %d items", len(items))
		}
	})
}

// FuzzDecodeGroup also checks that what the fast decoder accepts,
// encoding/json decodes to the same request.
func FuzzDecodeGroup(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, c := range groupBodies {
		f.Add(c.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		problem, responses, err := decodeGroup([]byte(body), new(groupScratch))
		checkDecoded(t, err, problem)
		if err == nil && len(responses) == 0 {
			t.Fatal("accepted a group without responses")
		}
		var fast groupRequest
		if fastGroup([]byte(body), &fast, new(groupScratch)) {
			checkLikeEncodingJSON(t, body, fast)
		}
	})
}

func FuzzDecodeGetReward(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		items, err := decodeGetReward([]byte(body), "")
		checkDecoded(t, err, items...)
		for _, it := range items {
			if it.err == "" && strings.HasSuffix(it.response, "<|im_end|>") {
				t.Fatalf("an end token was left on the response %q", it.response)
			}
		}
	})
}

func FuzzDecodeSlime(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		item, err := decodeSlime([]byte(body), "")
		checkDecoded(t, err, item)
	})
}

// FuzzHandlers sends fuzzed bodies to every scoring endpoint: the answer is
// 200 with JSON or 400 with an error, never a panic or another status.
func FuzzHandlers(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		for _, path := range []string{pathV1Score, pathV1ScoreGroup, pathGetReward, pathScore} {
			f.Add(path, s)
		}
	}
	grounded := rewardtest.GroundedLabels(f)[0]
	f.Add(pathV1Score, `{"items":[{"problem_id":"`+grounded.ID+`","response":"Log first; replay from the checkpoint."}]}`)
	f.Add(pathV1ScoreGroup, `{"question":`+strconv.Quote(grounded.Question)+`,"responses":["a","[sim:scores order=9]"]}`)
	f.Add(pathGetReward, `{"query":["<|im_start|>user\nWhat is 2+3?<|im_end|><|im_start|>assistant\nx<|im_start|>assistant\n<answer>5</answer>"]}`)
	h := newHarness(f, []schema.Label{rewardtest.DemoLabel(), grounded})
	f.Fuzz(func(t *testing.T, path, body string) {
		if endpointOf(path) == pathOther || path == pathHealthz || path == pathMetrics {
			return
		}
		h.t = t
		code, out := h.do(http.MethodPost, path, body)
		switch code {
		case http.StatusOK:
			if !json.Valid(out) {
				t.Fatalf("200 with a body that is not JSON: %s", out)
			}
		case http.StatusBadRequest:
			var e struct{ Error string }
			if json.Unmarshal(out, &e) != nil || e.Error == "" {
				t.Fatalf("400 without an error message: %s", out)
			}
		default:
			t.Fatalf("POST %s %q: status %d %s", path, body, code, out)
		}
	})
}

func TestResponseFromQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, query, prompt, want string
		err                       bool
	}{
		{"prompt prefix", chatMLPrompt + "The answer.<|im_end|>", chatMLPrompt, "The answer.", false},
		{"several end tokens", chatMLPrompt + "x\n<|im_end|>\n<|endoftext|><|endoftext|>", chatMLPrompt, "x", false},
		{"llama 3 with a BOS the prompt lacks", llama3Prompt + "y<|eot_id|>", strings.TrimPrefix(llama3Prompt, "<|begin_of_text|>") + " ", "y", false},
		{"several assistant headers: a guess", "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nfirst<|im_end|>\n<|im_start|>assistant\nsecond</s>", "", "second", true},
		{"gemma", "<start_of_turn>user\nq<end_of_turn>\n<start_of_turn>model\nz<end_of_turn>", "", "z", false},
		{"mistral", "<s>[INST] q [/INST] w</s>", "", " w", false},
		{"deepseek", "<｜User｜>q<｜Assistant｜>v<｜end▁of▁sentence｜>", "", "v", false},
		{"no header, not the prompt", "plain text", "other", "", true},
	} {
		got, err := ResponseFromQuery(tc.query, tc.prompt)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: %q, %v; want %q (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestByPrompt(t *testing.T) {
	t.Parallel()
	a := rewardtest.DemoLabel()
	b := rewardtest.DemoLabel()
	b.ID, b.Question = "multi", "Let x = 3.\nFind x + 2."
	dup1, dup2 := rewardtest.DemoLabel(), rewardtest.DemoLabel()
	dup1.ID, dup1.Question, dup2.ID, dup2.Question, dup2.GroundTruth = "d1", "Same text.", "d2", "Same  text.", "other"
	x, dups := NewIndex([]schema.Label{a, b, dup1, dup2, a})
	if dups != 1 || x.Len() != 4 {
		t.Fatalf("%d duplicates, %d problems; want 1 and 4", dups, x.Len())
	}
	for _, tc := range []struct {
		name, prompt, want string
		ambiguous          bool
	}{
		{"the problem", "What is 2+3?", "sum-2-3", false},
		{"whitespace differs", "\tWhat  is 2+3?\n", "sum-2-3", false},
		{"chatml", chatMLPrompt, "sum-2-3", false},
		{"llama 3", llama3Prompt, "sum-2-3", false},
		{"instruction before", "<|im_start|>user\nSolve step by step.\nWhat is 2+3?<|im_end|>", "sum-2-3", false},
		{"format rule after", "Let x = 3.\nFind x + 2.\nPut the answer in \\boxed{}.", "multi", false},
		{"labelled", "Answer carefully.\nProblem: What is 2+3?", "sum-2-3", false},
		{"several user turns", "<|im_start|>user\nWhat is 2+3?<|im_end|><|im_start|>assistant\n5<|im_end|><|im_start|>user\nLet x = 3.\nFind x + 2.<|im_end|>", "multi", false},
		{"not there", "What is 2+4?", "", false},
		{"a part of a line", "What is 2+3? And 4+4?", "", false},
		{"two problems share the text", "Same text.", "", true},
	} {
		l, ok, err := x.ByPrompt(tc.prompt)
		switch {
		case tc.ambiguous:
			if err == nil {
				t.Errorf("%s: no ambiguity error", tc.name)
			}
		case err != nil || ok != (tc.want != "") || (ok && l.ID != tc.want):
			t.Errorf("%s: %v %v %v, want %q", tc.name, l, ok, err, tc.want)
		}
	}
}
