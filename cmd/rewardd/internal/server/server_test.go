package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

const (
	chatMLPrompt = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"
	llama3Prompt = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat   is\n2+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
)

type getRewardAnswer struct {
	Rewards   []float64            `json:"rewards"`
	Scores    []float64            `json:"scores"`
	ExtraLogs map[string][]float64 `json:"extra_logs"`
}

// TestGetRewardOpenRLHF posts what OpenRLHF's remote reward client sends
// (openrlhf/utils/agent.py: one sample per request, query decoded with
// special tokens, the label column as given) and what v0.8 sent (a batch).
func TestGetRewardOpenRLHF(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	h := newHarness(t, []schema.Label{lab})

	// Current OpenRLHF: N = 1, the label column holds the label JSON string.
	var one getRewardAnswer
	h.post("/get_reward", mustJSON(t, map[string]any{
		"query": []string{chatMLPrompt + rewardtest.MarkedResponse + "<|im_end|>"}, "prompts": []string{chatMLPrompt}, "labels": []string{labelJSON(t, lab)},
	}), &one)
	if len(one.Rewards) != 1 || !rewardtest.Near(one.Rewards[0], markedSRaRReward) || !rewardtest.Near(one.Scores[0], markedSRaRScore) {
		t.Fatalf("got %+v, want reward %v score %v", one, markedSRaRReward, markedSRaRScore)
	}
	for k, want := range map[string]float64{"reward/suggest": 0.4, "reward/bonus": 1, "rubric/judge_ok": 1, "rubric/correct": 1, "rubric/satisfied": 3, "rubric/n_steps": 2, "rubric/error": 0} {
		if got := one.ExtraLogs[k]; len(got) != 1 || !rewardtest.Near(got[0], want) {
			t.Errorf("extra_logs[%s] = %v, want [%v]", k, got, want)
		}
	}

	// v0.8: a batch; no label column (labels ""), so the problem is found in
	// the prompt; a Llama 3 query whose prompt is not its prefix; a sample
	// of an unknown problem; a response without an answer.
	var batch getRewardAnswer
	h.post("/get_reward?scheme=rgr", mustJSON(t, map[string]any{
		"query": []string{
			chatMLPrompt + rewardtest.MarkedResponse + "<|im_end|><|endoftext|>",
			llama3Prompt + rewardtest.MarkedResponse + "<|eot_id|>",
			strings.Replace(chatMLPrompt, "2+3", "7+8", 1) + rewardtest.MarkedResponse + "<|im_end|>",
			chatMLPrompt + "I do not know." + sim.SatisfiedMarker(3) + "<|im_end|>",
		},
		"prompts": []string{chatMLPrompt, "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+3?<|eot_id|>", strings.Replace(chatMLPrompt, "2+3", "7+8", 1), chatMLPrompt},
		"labels":  []string{"", "", "", ""},
	}), &batch)
	// rgr: no FACTUAL items, so R: criteria met 1, 3 (pitfall avoided), 4, 5
	// of five for the marked response; only 3 (fallen into) fails for the
	// last, which meets none of the others: 0/5.
	wantRewards := []float64{0.8, 0.8, 0, 0}
	if !slices.EqualFunc(batch.Rewards, wantRewards, rewardtest.Near) || !slices.EqualFunc(batch.Scores, wantRewards, rewardtest.Near) {
		t.Errorf("rewards %v scores %v, want %v", batch.Rewards, batch.Scores, wantRewards)
	}
	if got := batch.ExtraLogs["rubric/error"]; !slices.Equal(got, []float64{0, 0, 1, 0}) {
		t.Errorf("rubric/error = %v, want the third sample in error", got)
	}
	if got := batch.ExtraLogs["rubric/correct"]; !slices.Equal(got, []float64{1, 1, 0, 0}) {
		t.Errorf("rubric/correct = %v", got)
	}
	if !slices.Equal(keysOf(batch.ExtraLogs), keysOf(one.ExtraLogs)) || len(batch.ExtraLogs) != len(extraLogKeys) {
		t.Errorf("extra_logs keys differ between answers: %v and %v", keysOf(batch.ExtraLogs), keysOf(one.ExtraLogs))
	}
	for k, v := range batch.ExtraLogs {
		if len(v) != 4 {
			t.Errorf("extra_logs[%s] has %d values for 4 samples", k, len(v))
		}
	}
	if !strings.Contains(h.logs.String(), "no rubric in the corpus") {
		t.Errorf("the unknown problem was not logged:\n%s", h.logs)
	}
}

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestScoreSlime posts what slime's remote_rm sends
// (slime/rollout/rm_hub: {"prompt", "response", "label"}, label a string).
func TestScoreSlime(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	h := newHarness(t, nil)
	body := mustJSON(t, map[string]any{
		"prompt":   []map[string]string{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"}},
		"response": rewardtest.MarkedResponse,
		"label":    labelJSON(t, lab),
	})
	var res reward.Result
	h.post("/score", body, &res)
	if !rewardtest.Near(res.Reward, markedSRaRReward) || !rewardtest.Near(res.Score, markedSRaRScore) || !res.JudgeOK || !res.Correct || res.ProblemID != lab.ID {
		t.Errorf("got %+v", res)
	}
	code, bare := h.do(http.MethodPost, "/score?bare=1&scheme=grounded", body)
	var r float64
	if code != http.StatusOK || json.Unmarshal(bare, &r) != nil || !rewardtest.Near(r, 0.8) {
		t.Errorf("bare grounded reward: %d %s, want 0.8", code, bare)
	}
	// An item with no rubric: the result object says so, a bare number
	// cannot, so it is an error rather than a reward of 0.
	unknown := mustJSON(t, map[string]any{"prompt": "A problem no corpus holds.", "response": rewardtest.MarkedResponse})
	h.post("/score", unknown, &res)
	if res.Error == "" {
		t.Errorf("unscorable item: %+v, want an error", res)
	}
	code, bare = h.do(http.MethodPost, "/score?bare=1", unknown)
	var e struct{ Error string }
	if code != http.StatusUnprocessableEntity || json.Unmarshal(bare, &e) != nil || e.Error != res.Error {
		t.Errorf("bare reward of an unscorable item: %d %s; want 422 with %q", code, bare, res.Error)
	}
}

// TestV1ScoreEmpty: an empty batch is answered, as /get_reward answers one
// (a trainer's last, empty split).
func TestV1ScoreEmpty(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var ans scoreAnswer
	h.post("/v1/score", `{"items": []}`, &ans)
	if ans.Results == nil || len(ans.Results) != 0 {
		t.Errorf("got %+v, want an empty results list", ans)
	}
}

type scoreAnswer struct {
	Results []reward.Result `json:"results"`
}

// TestV1Score covers every way an item names its problem, per-item and
// request schemes, and per-item errors.
func TestV1Score(t *testing.T) {
	t.Parallel()
	lab := rewardtest.DemoLabel()
	other := rewardtest.DemoLabel()
	other.ID, other.Question, other.Scheme = "other", "Compute 7 + 8.", schema.SchemeRGR
	h := newHarness(t, []schema.Label{lab, other})
	inline := rewardtest.DemoLabel()
	inline.ID = "inline"
	var got scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{
		"scheme": "rgr",
		"items": []map[string]any{
			{"request_id": "by-id", "problem_id": "sum-2-3", "response": rewardtest.MarkedResponse, "scheme": "srar"},
			{"request_id": "by-text", "question": "  What is\n2+3? ", "response": rewardtest.MarkedResponse, "scheme": "srar"},
			{"request_id": "by-messages", "prompt": []map[string]string{{"role": "user", "content": "What is 2+3?"}}, "response": rewardtest.MarkedResponse},
			{"request_id": "by-template", "prompt": chatMLPrompt, "response": rewardtest.MarkedResponse, "scheme": "grounded"},
			{"request_id": "by-label", "label": inline, "response": rewardtest.MarkedResponse, "scheme": "srar"},
			{"request_id": "unknown", "problem_id": "nope", "question": "What is 9+9?", "response": rewardtest.MarkedResponse},
			{"request_id": "nothing", "response": rewardtest.MarkedResponse},
		},
	}), &got)
	want := []struct {
		id, problem, scheme string
		reward              float64
		err                 string
	}{
		{"by-id", "sum-2-3", "srar", markedSRaRReward, ""},
		{"by-text", "sum-2-3", "srar", markedSRaRReward, ""},
		{"by-messages", "sum-2-3", "rgr", 0.8, ""},
		{"by-template", "sum-2-3", "grounded", 0.8, ""},
		{"by-label", "inline", "srar", markedSRaRReward, ""},
		{"unknown", "nope", "rgr", 0, `problem_id "nope" is not in the corpus; the question matches no problem text`},
		{"nothing", "", "rgr", 0, "the item names no problem"},
	}
	if len(got.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(got.Results), len(want))
	}
	for i, w := range want {
		r := got.Results[i]
		if r.RequestID != w.id || r.ProblemID != w.problem || r.Scheme != w.scheme || !rewardtest.Near(r.Reward, w.reward) {
			t.Errorf("%s: %s %s reward %v, want %s %s %v", w.id, r.ProblemID, r.Scheme, r.Reward, w.problem, w.scheme, w.reward)
		}
		if (w.err == "") != (r.Error == "") || !strings.Contains(r.Error, w.err) {
			t.Errorf("%s: error %q, want one containing %q", w.id, r.Error, w.err)
		}
	}
	r := got.Results[0]
	mid, end := strings.Index(rewardtest.MarkedResponse, "### Step 2"), len(rewardtest.MarkedResponse)
	wantSteps := []reward.StepResult{{StepSpan: reward.StepSpan{Step: 1, CharStart: 0, CharEnd: mid, ByteStart: 0, ByteEnd: mid}, Delta: 1.4}, {StepSpan: reward.StepSpan{Step: 2, CharStart: mid, CharEnd: end, ByteStart: mid, ByteEnd: end}, Delta: 0}}
	if !slices.Equal(r.Steps, wantSteps) {
		t.Errorf("steps %+v, want %+v", r.Steps, wantSteps)
	}
	wantItems := []reward.ItemVerdict{{ID: 1, Type: "SUGGEST", Satisfied: true, Step: 1}, {ID: 2, Type: "SUGGEST", Satisfied: false, Step: -1}, {ID: 3, Type: "PITFALL", Satisfied: false, Step: -1}, {ID: 4, Type: "BONUS", Satisfied: true, Step: 1}, {ID: 5, Type: "ANSWER", Satisfied: true, Step: 2}}
	if !slices.Equal(r.Items, wantItems) {
		t.Errorf("items %+v, want %+v", r.Items, wantItems)
	}
}

// TestJudgeFailureIsAnswered checks a judge that never gives a usable reply:
// 200, judge_ok false with the reason, the floor.
func TestJudgeFailureIsAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	resp := "### Step 1: Add.\n2+3 = 5 " + sim.JudgeFailsMarker + "\n<answer>5</answer>"
	var got scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
		{"problem_id": "sum-2-3", "response": resp, "scheme": "srar"},
		{"problem_id": "sum-2-3", "response": resp, "scheme": "grounded"},
	}}), &got)
	srar, grounded := got.Results[0], got.Results[1]
	if srar.JudgeOK || !strings.Contains(srar.JudgeError, "unusable after 3 attempts") || !rewardtest.Near(srar.Reward, 0) || srar.Error != "" {
		t.Errorf("srar: %+v; want judge_ok false after 3 attempts and r_base 1 - |R_PIT| = 0", srar)
	}
	if grounded.JudgeOK || grounded.Reward != 0 {
		t.Errorf("grounded: %+v; want judge_ok false and 0", grounded)
	}
	for _, route := range scoreRoutes[1:] { // the adapters pay the same floor
		if r := scoreVia(t, h, route, resp); r.JudgeOK || !rewardtest.Near(r.Reward, srar.Reward) || r.Error != "" {
			t.Errorf("%s: %+v; want judge_ok false at the floor %v", route, r, srar.Reward)
		}
	}
	// The two items share a call when they are judged at once; a failure is
	// not cached, so a later one calls again (the adapters' two included).
	// Each call is one reply and two repair turns.
	if st := h.judge.Stats(); st.Failures != st.Calls || st.Calls < 1 || st.Calls > 4 || h.simulator.Count() != 3*st.Calls {
		t.Errorf("judge stats %+v, %d requests to the endpoint: want every call failed after 3 requests", st, h.simulator.Count())
	}
}

// TestRescoringCostsNothing checks the verdict cache: the same request again
// sends nothing to the endpoint.
func TestRescoringCostsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	body := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}})
	var first, second scoreAnswer
	h.post("/v1/score", body, &first)
	sent := h.simulator.Count()
	h.post("/v1/score", body, &second)
	if h.simulator.Count() != sent || sent == 0 {
		t.Errorf("the endpoint got %d requests for the first scoring and %d more for the second", sent, h.simulator.Count()-sent)
	}
	if mustJSON(t, first) != mustJSON(t, second) {
		t.Errorf("re-scoring changed the result:\n%s\n%s", mustJSON(t, first), mustJSON(t, second))
	}
	if st := h.judge.Stats(); st.Calls != 1 || st.MemHits != 1 {
		t.Errorf("judge stats %+v, want 1 call and 1 memory hit", st)
	}
}

func TestScoreGroupEndpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	wrong := "### Step 1: Guess.\n2+3 = 6. " + sim.SatisfiedMarker(3) + "\n<answer>6</answer>"
	var g reward.Group
	h.post("/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "scheme": "papo", "responses": []string{rewardtest.MarkedResponse, wrong, rewardtest.MarkedResponse}}), &g)
	if len(g.Results) != 3 || len(g.Advantages) != 3 || len(g.Validity) != 5 {
		t.Fatalf("got %d results, %d advantages, %d validity entries", len(g.Results), len(g.Advantages), len(g.Validity))
	}
	// Two identical correct rollouts: equal process rewards, so A_proc = 0;
	// the outcome advantage is GRPO's of (1, 0, 1).
	out := reward.GroupAdvantages([]float64{1, 0, 1}, reward.DefaultParams().Epsilon)
	for i, a := range g.Advantages {
		if !rewardtest.Near(a.Outcome, out[i]) || a.Process != 0 || len(a.Steps) != 0 {
			t.Errorf("rollout %d: %+v, want outcome %v", i, a, out[i])
		}
	}
	var unknown groupJSON
	h.post("/v1/score_group", mustJSON(t, map[string]any{"question": "What is 9+9?", "responses": []string{"a", "b"}}), &unknown)
	if unknown.Error == "" || len(unknown.Results) != 2 || unknown.Results[1].Error != unknown.Error {
		t.Errorf("unknown problem: %+v", unknown)
	}
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/v1/score", ``, "empty"},
		{"/v1/score", `{"items": [`, "not valid JSON"},
		{"/v1/score", `[1, 2]`, "must be a JSON object"},
		{"/v1/score", `{}`, "items: required"},
		{"/v1/score", `{"items": [{"problem_id": "x"}]}`, "items[0].response: required"},
		{"/v1/score", `{"items": [{"response": 5}]}`, "items.response: expected a string"},
		{"/v1/score", `{"items": [{"response": "r", "scheme": "best"}]}`, `items[0].scheme: "best" is not a scheme`},
		{"/v1/score", `{"scheme": "x", "items": [{"response": "r"}]}`, "scheme:"},
		{"/v1/score", `{"items": [{"response": "r", "prompt": [{"role": "user"}]}]}`, "items[0].prompt[0]: a message needs"},
		{"/v1/score", `{"items": [{"response": "r", "prompt": 3}]}`, "items[0].prompt: expected a string or a list"},
		{"/v1/score", `{"items": [{"response": "r"}]} {"x": 1}`, "after top-level value"},
		{"/v1/score_group", `{"problem_id": "x"}`, "responses: required"},
		{"/v1/score_group", `{"responses": []}`, "responses: empty"},
		{"/v1/score_group", `{"responses": ["a"], "label": {"rubric": [{"id": 1, "type": "FOO", "text": "t"}]}}`, "label: label.rubric[0].type"},
		{"/get_reward", `{"prompts": ["p"]}`, "query: required"},
		{"/get_reward", `{"query": ["a", "b"], "prompts": ["p"]}`, "prompts: 1 entries, query has 2"},
		{"/get_reward", `{"query": ["a"], "labels": ["x", "y"]}`, "labels: 2 entries, query has 1"},
		{"/get_reward", `{"query": "a"}`, "query: expected a list"},
		{"/get_reward?scheme=best", `{"query": ["a"]}`, "the scheme URL parameter"},
		{"/score", `{"prompt": "p"}`, "response: required"},
	} {
		h.wantBadRequest(tc.path, tc.body, tc.field)
	}
	if h.simulator.Count() != 0 {
		t.Errorf("malformed requests reached the judge %d times", h.simulator.Count())
	}
	// A bad label fails its own item, with the field named, not the request.
	for _, tc := range []struct {
		path, body, field string
	}{
		{"/v1/score", `{"items": [{"response": "r", "label": "{\"rubric\": []}"}]}`, "items[0].label: label.rubric: no items"},
		{"/v1/score", `{"items": [{"response": "r", "label": [7]}]}`, "items[0].label: expected the label as a JSON string (the reward spec or the answer), an object or a number"},
		{"/score", `{"response": "r", "label": {"rubric": [{"id": 0, "type": "SUGGEST", "text": "t"}]}}`, "label: label.rubric[0].id"},
	} {
		code, body := h.do(http.MethodPost, tc.path, tc.body)
		if code != http.StatusOK || !strings.Contains(string(body), tc.field) {
			t.Errorf("POST %s %s: %d %s; want 200 with the item's error naming %q", tc.path, tc.body, code, body, tc.field)
		}
	}
}

func TestHTTPLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(c *Config, _ *sim.Config) { c.MaxBodyBytes = 64 })
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{http.MethodPost, "/v1/score", `{"items": [{"response": "` + strings.Repeat("x", 100) + `"}]}`, http.StatusRequestEntityTooLarge},
		{http.MethodGet, "/v1/score", "", http.StatusMethodNotAllowed},
		{http.MethodPost, "/healthz", "", http.StatusMethodNotAllowed},
		{http.MethodGet, "/v2/score", "", http.StatusNotFound},
		{http.MethodGet, "/healthz", "", http.StatusOK},
	} {
		if code, body := h.do(tc.method, tc.path, tc.body); code != tc.code {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-value"
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config, _ *sim.Config) { c.Token = token })
	body := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "nope", "response": "r"}}})
	for _, tc := range []struct {
		name, path string
		header     []string
		code       int
	}{
		{"no token", "/v1/score", nil, http.StatusUnauthorized},
		{"wrong token", "/v1/score", []string{"Authorization", "Bearer s3cret-token-valuf"}, http.StatusUnauthorized},
		{"prefix of the token", "/v1/score", []string{"Authorization", "Bearer s3cret"}, http.StatusUnauthorized},
		{"not a bearer", "/v1/score", []string{"Authorization", "Basic " + token}, http.StatusUnauthorized},
		{"right token", "/v1/score", []string{"Authorization", "Bearer " + token}, http.StatusOK},
		{"scheme in lower case", "/v1/score", []string{"Authorization", "bearer " + token}, http.StatusOK}, // RFC 9110 11.1: case-insensitive
		{"scheme in upper case", "/v1/score", []string{"Authorization", "BEARER " + token}, http.StatusOK},
		{"spaces after the scheme", "/v1/score", []string{"Authorization", "Bearer   " + token}, http.StatusOK},
		{"scheme without a space", "/v1/score", []string{"Authorization", "Bearer" + token}, http.StatusUnauthorized},
		{"metrics need it", "/metrics", nil, http.StatusUnauthorized},
	} {
		method := http.MethodPost
		if tc.path == "/metrics" {
			method = http.MethodGet
		}
		if code, out := h.do(method, tc.path, body, tc.header...); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, out, tc.code)
		}
	}
	if code, _ := h.do(http.MethodGet, "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without a token: %d, want 200", code)
	}
	// The adapters' routes: the same rules, and the ORS clients' X-API-Key
	// header carries the token as well.
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, "/verify", verifyBody(t, rewardtest.MarkedResponse, map[string]any{"problem_id": "sum-2-3"})},
		{http.MethodGet, "/list_environments", ""},
		{http.MethodPost, "/rubricforge/tasks", `{"split": "train"}`},
		{http.MethodPost, "/create_session", ""},
	} {
		for _, tc := range []struct {
			name   string
			header []string
			code   int
		}{
			{"no token", nil, http.StatusUnauthorized},
			{"wrong X-API-Key", []string{"X-API-Key", token + "x"}, http.StatusUnauthorized},
			{"right X-API-Key", []string{"X-API-Key", token}, http.StatusOK},
			{"right bearer", []string{"Authorization", "Bearer " + token}, http.StatusOK},
		} {
			if code, out := h.do(r.method, r.path, r.body, tc.header...); code != tc.code {
				t.Errorf("%s %s, %s: %d %s, want %d", r.method, r.path, tc.name, code, out, tc.code)
			}
		}
	}
	if code, _ := h.do(http.MethodGet, "/health", ""); code != http.StatusOK {
		t.Errorf("ORS's /health without a token: %d, want 200", code)
	}
	if strings.Contains(h.logs.String(), token) {
		t.Errorf("the token reached the log:\n%s", h.logs)
	}
}

func TestHealthzAndMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	code, out := h.do(http.MethodGet, "/healthz", "")
	if code != http.StatusOK || strings.TrimSpace(string(out)) != `{"judge":{"breaker":"closed","failure_ratio_1m":0,"judged_1m":0,"stalled_calls":0},"ok":true,"records":1,"status":"ok"}` {
		t.Errorf("/healthz: %d %s", code, out)
	}
	body := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}, {"problem_id": "nope", "response": "x"}}})
	h.post("/v1/score", body, &scoreAnswer{})
	h.post("/v1/score", body, &scoreAnswer{})
	h.do(http.MethodPost, "/v1/score", "{")
	_, m := h.do(http.MethodGet, "/metrics", "")
	for _, line := range []string{
		`rewardd_requests_total{endpoint="/v1/score",code="200"} 2`,
		`rewardd_requests_total{endpoint="/v1/score",code="400"} 1`,
		`rewardd_requests_total{endpoint="/healthz",code="200"} 1`,
		`rewardd_request_duration_seconds_count{endpoint="/v1/score"} 3`,
		`rewardd_request_duration_seconds_bucket{endpoint="/v1/score",le="+Inf"} 3`,
		`rewardd_results_total{scheme="srar",outcome="ok"} 2`,
		`rewardd_results_total{scheme="srar",outcome="error"} 2`,
		`rewardd_judge_calls_total 1`,
		`rewardd_judge_cache_hits_total{cache="memory"} 1`,
		`rewardd_judge_failures_total 0`,
		`rewardd_judge_duration_seconds_count 1`,
		`rewardd_corpus_records 1`,
		`rewardd_requests_in_flight 0`,
		`# TYPE rewardd_request_duration_seconds histogram`,
	} {
		if !strings.Contains(string(m), line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	checkPrometheusText(t, string(m))
}

// checkPrometheusText checks the exposition format's shape: every sample
// belongs to a declared metric, and histogram buckets are cumulative.
func checkPrometheusText(t *testing.T, text string) {
	t.Helper()
	declared := map[string]string{}
	var last float64
	lastSeries := ""
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			declared[f[0]] = f[1]
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if declared[name] == "" && declared[base] != "histogram" {
			t.Errorf("sample of an undeclared metric: %s", line)
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			t.Errorf("bad value: %s", line)
		}
		if strings.HasSuffix(name, "_bucket") {
			series := line[:strings.Index(line, "le=")]
			if series == lastSeries && v < last {
				t.Errorf("bucket counts decrease: %s", line)
			}
			lastSeries, last = series, v
		}
	}
}

// TestQueueBound fills the queue with one request held by a slow judge and
// checks the next is refused with 503 after the queue wait, not queued
// without bound.
func TestQueueBound(t *testing.T) {
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config, s *sim.Config) {
		c.MaxQueue, c.QueueWait = 1, 10*time.Millisecond
		s.Latency = time.Minute
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}})
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/score", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, req)
		done <- rec.Code
	}()
	for h.simulator.Count() == 0 { // the first request is at the judge
		time.Sleep(time.Millisecond)
	}
	code, out := h.do(http.MethodPost, "/v1/score", body)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(out), "--max-queue") {
		t.Errorf("second request: %d %s, want 503", code, out)
	}
	cancel()
	if code := <-done; code != http.StatusOK {
		t.Errorf("the held request ended with %d, want 200 (judge_ok false)", code)
	}
}

// TestServeDrains stops the server while a request is at the judge and
// checks the request is still answered.
func TestServeDrains(t *testing.T) {
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(_ *Config, s *sim.Config) { s.Latency = 200 * time.Millisecond })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.srv.Serve(ctx, ln, 30*time.Second) }()
	body := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}})
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/score", "application/json", strings.NewReader(body))
		if err == nil {
			defer resp.Body.Close()
			var got scoreAnswer
			err = json.NewDecoder(resp.Body).Decode(&got)
			if err == nil && (resp.StatusCode != http.StatusOK || !got.Results[0].JudgeOK) {
				err = fmt.Errorf("status %d, result %+v", resp.StatusCode, got.Results)
			}
		}
		answered <- err
	}()
	for h.simulator.Count() == 0 {
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-answered; err != nil {
		t.Errorf("the request in flight: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
