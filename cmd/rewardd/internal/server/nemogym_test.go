package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// verifyBody is a /verify request as a NeMo Gym agent posts it: the
// Responses API request and response, and the dataset row's fields.
func verifyBody(t testing.TB, answer string, row map[string]any) string {
	t.Helper()
	body := map[string]any{
		"responses_create_params": map[string]any{"input": []map[string]any{
			{"role": "system", "content": "Solve it."},
			{"role": "user", "content": []map[string]string{{"type": "input_text", "text": "What is 2+3?"}}},
		}},
		"response": map[string]any{
			"id": "resp_1", "created_at": 1.0, "model": "policy", "object": "response",
			"output": []map[string]any{
				{"id": "rs_1", "type": "reasoning", "summary": []any{}},
				{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
					"content": []map[string]any{{"type": "output_text", "text": answer, "annotations": []any{}}}},
			},
			"parallel_tool_calls": false, "tool_choice": "none", "tools": []any{},
		},
	}
	for k, v := range row {
		body[k] = v
	}
	return mustJSON(t, body)
}

// verifyAnswer is the part of a /verify reply the tests read.
type verifyAnswer struct {
	Reward        float64         `json:"reward"`
	MaskSample    bool            `json:"mask_sample"`
	FailureReason string          `json:"failure_reason"`
	RubricResult  reward.Result   `json:"rubric_result"`
	Response      json.RawMessage `json:"response"`
	Params        json.RawMessage `json:"responses_create_params"`
	Row           string          `json:"row_field"`
}

// TestVerifyNeMoGymShape posts /verify as NeMo Gym does, the rubric found by
// the row's problem_id, its label (a verl export's label column), or the
// prompt: the reply is the request with the reward /v1/score gives the same
// answer; a failed judgment is paid the floor and masked; a response that
// cannot be scored is a 422 naming why.
func TestVerifyNeMoGymShape(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	h := newHarness(t, []schema.Label{lab})
	var v1 scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}}), &v1)
	failing := "### Step 1: Add.\n2+3 = 5 " + sim.JudgeFailsMarker + "\n<answer>5</answer>"
	for _, tc := range []struct {
		name   string
		answer string
		row    map[string]any
		reward float64
		masked bool
	}{
		{"by problem id", rewardtest.MarkedResponse, map[string]any{"problem_id": "sum-2-3", "row_field": "kept"}, v1.Results[0].Reward, false},
		{"by label", rewardtest.MarkedResponse, map[string]any{"label": labelJSON(t, lab), "row_field": "kept"}, v1.Results[0].Reward, false},
		{"by prompt", rewardtest.MarkedResponse, map[string]any{"row_field": "kept"}, v1.Results[0].Reward, false},
		{"judge failed", failing, map[string]any{"problem_id": "sum-2-3", "row_field": "kept"}, 0, true},
	} {
		var got verifyAnswer
		h.post("/verify", verifyBody(t, tc.answer, tc.row), &got)
		if got.Reward != tc.reward || got.MaskSample != tc.masked || got.RubricResult.Reward != got.Reward || got.Row != "kept" ||
			!strings.Contains(string(got.Response), `"resp_1"`) || !strings.Contains(string(got.Params), "What is 2+3?") {
			t.Errorf("%s: %+v, want reward %v, mask_sample %v and the request echoed", tc.name, got, tc.reward, tc.masked)
		}
		if tc.masked && !strings.Contains(got.FailureReason, "judge") {
			t.Errorf("%s: failure_reason %q does not name the judge", tc.name, got.FailureReason)
		}
	}
	for _, tc := range []struct {
		name, body string
		code       int
		says       string
	}{
		{"unknown problem", `{"responses_create_params": {"input": "What is 7+8?"}, "response": {"output": [{"type": "message", "role": "assistant", "content": "15"}]}, "problem_id": "nope"}`,
			http.StatusUnprocessableEntity, `problem_id \"nope\" is not in the corpus`},
		{"no response", `{"responses_create_params": {"input": "What is 2+3?"}}`, http.StatusBadRequest, "response: required"},
		{"bad input", `{"responses_create_params": {"input": 5}, "response": {"output": []}}`, http.StatusBadRequest, "responses_create_params.input"},
	} {
		if code, out := h.do(http.MethodPost, "/verify", tc.body); code != tc.code || !strings.Contains(string(out), tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, code, out, tc.code, tc.says)
		}
	}
}

// scoreRoutes are the routes TestBreakerOpensOnOutages and the judge
// failure tests score through: the native one and the adapters'.
var scoreRoutes = []string{pathV1Score, pathVerify, pathORSCall}

// scoreVia scores response to sum-2-3 through route.
func scoreVia(t *testing.T, h *harness, route, response string) reward.Result {
	t.Helper()
	switch route {
	case pathVerify:
		var got verifyAnswer
		h.post("/verify", verifyBody(t, response, map[string]any{"problem_id": "sum-2-3"}), &got)
		return got.RubricResult
	case pathORSCall:
		e := openEpisode(t, orsDo(h.do), map[string]any{"task_spec": map[string]string{"id": "sum-2-3"}})
		ok, out, msg := e.answer(response)
		if !ok {
			t.Fatalf("ORS answer: %s", msg)
		}
		return out.Metadata
	}
	var got scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": response}}}), &got)
	return got.Results[0]
}

// distinctMarked is MarkedResponse made distinct by i, so that no verdict
// is read from the cache.
func distinctMarked(i int) string {
	return strings.Replace(rewardtest.MarkedResponse, "5-3 = 2.", fmt.Sprintf("5-3 = 2 (%d).", i), 1)
}

// FuzzDecodeVerify: any body is a verify item or a bad request naming why;
// an accepted one has an answer to grade and echoes an object's fields.
func FuzzDecodeVerify(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add(verifyBody(f, rewardtest.MarkedResponse, map[string]any{"problem_id": "sum-2-3"}))
	f.Add(`{"responses_create_params": {"input": "q"}, "response": {"output": [{"type": "message", "role": "assistant", "content": "a"}]}}`)
	f.Add(`{"responses_create_params": {"input": [{"role": "user", "content": [{"type": "input_text", "text": 5}]}]}, "response": {"output": []}}`)
	f.Fuzz(func(t *testing.T, body string) {
		it, fields, err := decodeVerify([]byte(body), "")
		checkDecoded(t, err, it)
		if err == nil && (fields == nil || it.response == "" && !strings.Contains(body, `""`) && !strings.Contains(body, `\u`)) {
			t.Fatalf("accepted %q without fields or an answer: %+v", body, it)
		}
	})
}

// FuzzORSRequests: any body on an ORS route gets an answer, never a panic:
// a 200 of JSON or events, or an error that says what is wrong.
func FuzzORSRequests(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"split": "train"}`, `{"split": "train", "index": 0}`, `{"split": "train", "start": -3, "stop": 99}`,
		`{"task_spec": {"id": "sum-2-3"}}`, `{"task_spec": 5}`, `{"env_name": "rubricforge", "split": "train", "index": -1}`,
		`{"name": "answer", "input": {"answer": 5}}`, `{"name": "answer", "input": {"answer": "<answer>5</answer>"}, "task_id": "x"}`} {
		for _, path := range []string{"/rubricforge/tasks", "/rubricforge/task_range", "/rubricforge/task", "/create", "/rubricforge/call"} {
			f.Add(path, s)
		}
	}
	h := newHarness(f, []schema.Label{rewardtest.DemoLabel()})
	if code, out := h.do(http.MethodPost, "/create", `{"split": "train", "index": 0}`, "X-Session-ID", "fuzz"); code != http.StatusOK {
		f.Fatalf("/create: %d %s", code, out)
	}
	f.Fuzz(func(t *testing.T, path, body string) {
		if u, err := url.ParseRequestURI(path); err != nil || u.Path != path || strings.ContainsAny(path, " ") {
			return // not a path a client can send
		}
		h.t = t // the fuzz target runs one input at a time
		code, out := h.do(http.MethodPost, path, body, "X-Session-ID", "fuzz")
		switch {
		case code == http.StatusOK && len(out) == 0:
			t.Fatalf("POST %s %q: 200 with no body", path, body)
		case code >= 400 && !strings.Contains(string(out), `"error"`):
			t.Fatalf("POST %s %q: %d without an error message: %s", path, body, code, out)
		}
	})
}

func TestSliceBoundsArePythons(t *testing.T) {
	t.Parallel()
	p := func(v int) *int { return &v }
	for _, tc := range []struct {
		start, stop *int
		lo, hi      int
	}{
		{nil, nil, 0, 5}, {p(1), p(3), 1, 3}, {p(-2), nil, 3, 5}, {nil, p(-1), 0, 4}, {p(4), p(2), 4, 4}, {p(-9), p(99), 0, 5}, {p(7), nil, 5, 5},
	} {
		if lo, hi := sliceBounds(5, tc.start, tc.stop); lo != tc.lo || hi != tc.hi {
			t.Errorf("range(5)[%v:%v] = [%d:%d], want [%d:%d]", tc.start, tc.stop, lo, hi, tc.lo, tc.hi)
		}
	}
}
