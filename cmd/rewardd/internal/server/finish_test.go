package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// boxedMarked is rewardtest.MarkedResponse ending on a boxed answer instead
// of its answer tag: what a rollout cut off at the token limit right after
// its box looks like. midSentence stops without its full stop.
var (
	boxedMarked = strings.TrimSuffix(rewardtest.MarkedResponse, "<answer>5</answer>") + "So the sum is \\boxed{5}"
	midSentence = strings.TrimSuffix(rewardtest.MarkedResponse, "\n<answer>5</answer>") + "\nSo the sum is 5"
)

// TestV1ScoreFinishReason: a correct boxed response whose finish_reason is
// "length" gets no answer reward and says it was cut off; with "stop" or
// none it is paid as before, and a response that stops mid-sentence with
// "stop" keeps its answer. Without the field the answer has no cut_off.
func TestV1ScoreFinishReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	item := func(id, response string, finish any) map[string]any {
		m := map[string]any{"request_id": id, "problem_id": "sum-2-3", "response": response}
		if finish != nil {
			m["finish_reason"] = finish
		}
		return m
	}
	body := mustJSON(t, map[string]any{"scheme": "srar", "items": []map[string]any{
		item("length", boxedMarked, "length"), item("filter", boxedMarked, "content_filter"), item("stop", boxedMarked, "stop"),
		item("absent", boxedMarked, nil), item("mid-sentence", midSentence, "stop"),
	}})
	var got scoreAnswer
	h.post("/v1/score", body, &got)
	lambda := reward.DefaultParams().Lambda
	want := []struct {
		correct  bool
		cutOff   string
		accuracy float64
	}{
		{false, "finish_reason length", 0}, {false, "finish_reason content_filter", 0},
		{true, "", 1 - lambda}, {true, "", 1 - lambda}, {true, "", 1 - lambda},
	}
	paid := got.Results[3].Reward
	for i, w := range want {
		r := got.Results[i]
		if r.Correct != w.correct || r.CutOff != w.cutOff || !rewardtest.Near(r.Components["accuracy"], w.accuracy) {
			t.Errorf("%s: correct %v, cut_off %q, accuracy %v; want %v, %q, %v", r.RequestID, r.Correct, r.CutOff, r.Components["accuracy"], w.correct, w.cutOff, w.accuracy)
		}
		if w.correct && r.RequestID != "mid-sentence" && !rewardtest.Near(r.Reward, paid) { // mid-sentence has no answer tag: format 0
			t.Errorf("%s: reward %v, want %v as without a finish reason", r.RequestID, r.Reward, paid)
		}
		if !w.correct && !rewardtest.Near(r.Reward, paid-(1-lambda)) {
			t.Errorf("%s: reward %v, want %v: the answer term lost, the rest as judged", r.RequestID, r.Reward, paid-(1-lambda))
		}
	}
	_, plain := h.do(http.MethodPost, "/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{item("absent", boxedMarked, nil)}}))
	_, null := h.do(http.MethodPost, "/v1/score", `{"items": [{"request_id": "absent", "problem_id": "sum-2-3", "response": `+mustJSON(t, boxedMarked)+`, "finish_reason": null}]}`)
	if bytes.Contains(plain, []byte("cut_off")) || !bytes.Equal(plain, null) {
		t.Errorf("without a finish reason:\n%s\nwith null:\n%s", plain, null)
	}
}

// TestV1ScoreGroupFinishReasons: over /v1/score_group (the fast decoder and
// encoding/json's), a cut-off response is not correct, says so, and gets
// no more reward or advantage, on any term or step, than its group-mate
// with the same text that stopped; finish_reasons all "stop" for responses
// that end properly answer byte for byte as without the field.
func TestV1ScoreGroupFinishReasons(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	wrong := "### Step 1: Guess.\n2+3 = 6. " + sim.SatisfiedMarker(3) + "\n<answer>6</answer>"
	responses := []string{boxedMarked, boxedMarked, wrong, rewardtest.MarkedResponse}
	for _, scheme := range schema.Schemes {
		if scheme == schema.SchemeGrounded {
			continue // a math rubric under the grounded scheme has no answer term
		}
		fields := map[string]any{"problem_id": "sum-2-3", "scheme": scheme, "responses": responses, "finish_reasons": []any{"stop", "length", nil, "stop"}}
		fast := mustJSON(t, fields)
		fields["request_id"] = nil // not a string: encoding/json decodes the body
		for name, body := range map[string]string{"fast": fast, "encoding/json": mustJSON(t, fields)} {
			var g reward.Group
			h.post("/v1/score_group", body, &g)
			cut, done := g.Results[1], g.Results[0]
			if cut.Correct || cut.CutOff != "finish_reason length" || !done.Correct || done.CutOff != "" || g.Results[2].CutOff != "" {
				t.Errorf("%s, %s: cut off: correct %v, cut_off %q; stopped: correct %v, cut_off %q", scheme, name, cut.Correct, cut.CutOff, done.Correct, done.CutOff)
			}
			for _, bad := range moreThanTwin(cut, done, g.Advantages[1], g.Advantages[0]) {
				t.Errorf("%s, %s: the cut-off response gets more than its stopped twin: %s", scheme, name, bad)
			}
		}
		without := mustJSON(t, map[string]any{"problem_id": "sum-2-3", "scheme": scheme, "responses": responses})
		stopped := mustJSON(t, map[string]any{"problem_id": "sum-2-3", "scheme": scheme, "responses": responses, "finish_reasons": []string{"stop", "stop", "stop", "stop"}})
		_, a := h.do(http.MethodPost, "/v1/score_group", without)
		_, b := h.do(http.MethodPost, "/v1/score_group", stopped)
		if !bytes.Equal(a, b) || bytes.Contains(a, []byte("cut_off")) {
			t.Errorf("%s: finish_reasons all stop changes the answer:\n%s\n%s", scheme, a, b)
		}
	}
}

// moreThanTwin names each figure a trainer reads on which the cut-off
// result and advantage exceed its twin's.
func moreThanTwin(cut, twin reward.Result, ca, ta reward.Advantage) []string {
	var out []string
	check := func(name string, got, ceiling float64) {
		if got > ceiling && !rewardtest.Near(got, ceiling) {
			out = append(out, name)
		}
	}
	check("reward", cut.Reward, twin.Reward)
	check("score", cut.Score, twin.Score)
	check("outcome", ca.Outcome, ta.Outcome)
	check("process", ca.Process, ta.Process)
	check("total", ca.Total, ta.Total)
	for k := range min(len(ca.Steps), len(ta.Steps)) {
		check("step offset", ca.Steps[k].Offset, ta.Steps[k].Offset)
		check("step advantage", ca.Steps[k].Advantage, ta.Steps[k].Advantage)
	}
	for k := range min(len(cut.Steps), len(twin.Steps)) {
		check("step delta", cut.Steps[k].Delta, twin.Steps[k].Delta)
	}
	return out
}

// TestFinishReasonMalformed: a finish_reason that is not a string, or a
// finish_reasons list that is not parallel to the responses, is a 400
// naming the field, and no judge is asked.
func TestFinishReasonMalformed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/v1/score", `{"items": [{"response": "r", "finish_reason": "stop"}, {"response": "r", "finish_reason": 5}]}`, "items[1].finish_reason: expected a string"},
		{"/v1/score", `{"items": [{"response": "r", "finish_reason": ["length"]}]}`, "items[0].finish_reason: expected a string"},
		{"/v1/score_group", `{"responses": ["a", "b"], "finish_reasons": "length"}`, "finish_reasons: expected a list of strings"},
		{"/v1/score_group", `{"responses": ["a", "b"], "finish_reasons": ["stop"]}`, "finish_reasons: 1 entries, responses has 2"},
		{"/v1/score_group", `{"responses": ["a"], "finish_reasons": ["stop", "length"]}`, "finish_reasons: 2 entries, responses has 1"},
		{"/v1/score_group", `{"responses": ["a", "b"], "finish_reasons": ["stop", true]}`, "finish_reasons[1]: expected a string"},
		{"/v1/score_group", `{"responses": ["a"], "finish_reasons": [{"reason": "stop"}], "problem_id": null}`, "finish_reasons[0]: expected a string"},
	} {
		h.wantBadRequest(tc.path, tc.body, tc.field)
	}
	if h.simulator.Count() != 0 {
		t.Errorf("malformed requests reached the judge %d times", h.simulator.Count())
	}
}

// TestFastGroupFinishReasons: the fast decoder reads finish_reasons as
// encoding/json does.
func TestFastGroupFinishReasons(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"responses": ["a", "b"], "finish_reasons": ["stop", "length"]}`,
		`{"finish_reasons": [null, "stop"], "responses": ["a", "b"]}`,
		`{"responses": ["a"], "finish_reasons": null}`,
		`{"responses": ["a"], "finish_reasons": 7}`,
	} {
		var fast groupRequest
		if !fastGroup([]byte(body), &fast, new(groupScratch)) {
			t.Errorf("fastGroup(%q) left it to encoding/json", body)
			continue
		}
		checkLikeEncodingJSON(t, body, fast)
	}
}

// TestGroupAppendJSONCutOff: the group encoder writes a cut-off result's
// cut_off as json.Encoder does.
func TestGroupAppendJSONCutOff(t *testing.T) {
	t.Parallel()
	items := rewardtest.BenchRubric()
	lab := rewardtest.Label(items)
	rs := rewardtest.BenchGroup(4, items, judged)
	for _, i := range []int{1, 3} {
		cut := reward.AnalyzeFinished(rs[i].Response, "5", "length")
		cut.Verdicts = rs[i].Verdicts
		rs[i] = cut
	}
	g := groupJSON{Group: reward.ScoreGroup(reward.DefaultParams(), schema.SchemePAPO, lab, rs)}
	got, ok := g.appendJSON(nil)
	if want := encodingJSON(t, g); !ok || !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"cut_off":"finish_reason length"`)) {
		t.Fatalf("ok %v\n got %s\nwant %s", ok, got, want)
	}
}

// TestVerifyNeMoGymIncomplete: NeMo Gym's /verify carries the policy's
// Responses API response, whose status "incomplete" (incomplete_details
// max_output_tokens or content_filter) says the endpoint cut it off: no
// answer is taken from it. "completed", or no status, reads it as before.
func TestVerifyNeMoGymIncomplete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	for _, tc := range []struct {
		name    string
		status  any
		details any
		correct bool
		cutOff  string
	}{
		{"max_output_tokens", "incomplete", map[string]any{"reason": "max_output_tokens"}, false, "finish_reason length"},
		{"content_filter", "incomplete", map[string]any{"reason": "content_filter"}, false, "finish_reason content_filter"},
		{"incomplete without details", "incomplete", nil, false, "finish_reason length"},
		{"completed", "completed", nil, true, ""},
		{"no status", nil, nil, true, ""},
		{"a status that is not a string", 7, nil, true, ""},
	} {
		var body map[string]any
		if err := json.Unmarshal([]byte(verifyBody(t, boxedMarked, map[string]any{"problem_id": "sum-2-3"})), &body); err != nil {
			t.Fatal(err)
		}
		resp := body["response"].(map[string]any)
		if tc.status != nil {
			resp["status"] = tc.status
		}
		if tc.details != nil {
			resp["incomplete_details"] = tc.details
		}
		var got verifyAnswer
		h.post("/verify", mustJSON(t, body), &got)
		if r := got.RubricResult; r.Correct != tc.correct || r.CutOff != tc.cutOff {
			t.Errorf("%s: correct %v, cut_off %q; want %v, %q", tc.name, r.Correct, r.CutOff, tc.correct, tc.cutOff)
		}
	}
}

// FuzzDecodeGroupFinishReasons: a group that decodes has no finish reasons
// or exactly one per response, and the fast decoder reads finish_reasons as
// encoding/json does.
func FuzzDecodeGroupFinishReasons(f *testing.F) {
	for _, s := range []string{
		`{"responses": ["a", "b"], "finish_reasons": ["stop", "length"]}`,
		`{"responses": ["a", "b"], "finish_reasons": [null, "length"]}`,
		`{"responses": ["a"], "finish_reasons": ["stop", "length"]}`,
		`{"responses": ["a"], "finish_reasons": "stop"}`,
		`{"responses": ["a"], "finish_reasons": [1]}`,
		`{"responses": ["a"], "finish_reasons": ["\u006cength"], "problem_id": null}`,
		`{"responses": ["a"], "Finish_Reasons": ["length"]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		problem, responses, err := decodeGroup([]byte(body), new(groupScratch))
		if err == nil && problem.finishes != nil && len(problem.finishes) != len(responses) {
			t.Fatalf("%d finish reasons for %d responses", len(problem.finishes), len(responses))
		}
		var fast groupRequest
		if fastGroup([]byte(body), &fast, new(groupScratch)) {
			checkLikeEncodingJSON(t, body, fast)
		}
	})
}
