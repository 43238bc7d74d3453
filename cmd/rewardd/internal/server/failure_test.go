package server

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// TestJudgeFailureRateIsReported checks that a batch with a failed judgment
// says so where a trainer and an operator look: every sample's extra_logs
// carries the batch's judge-failure rate, and /metrics the recent rate.
func TestJudgeFailureRateIsReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	failing := "### Step 1: Add.\n2+3 = 5 " + sim.JudgeFailsMarker + "\n<answer>5</answer>"
	queries := []string{chatMLPrompt + rewardtest.MarkedResponse, chatMLPrompt + failing, chatMLPrompt + rewardtest.MarkedResponse + " ", chatMLPrompt + "<answer>5</answer>"}
	var got getRewardAnswer
	h.post("/get_reward", mustJSON(t, map[string]any{"query": queries}), &got)
	if rate := got.ExtraLogs["rubric/judge_failure_rate"]; !slices.Equal(rate, []float64{0.25, 0.25, 0.25, 0.25}) {
		t.Errorf("extra_logs rubric/judge_failure_rate = %v, want 0.25 for every sample", rate)
	}
	if ok := got.ExtraLogs["rubric/judge_ok"]; !slices.Equal(ok, []float64{1, 0, 1, 1}) {
		t.Errorf("extra_logs rubric/judge_ok = %v", ok)
	}
	_, m := h.do(http.MethodGet, "/metrics", "")
	for _, line := range []string{
		"rewardd_judge_failure_ratio 0.25\n",
		`rewardd_results_total{scheme="srar",outcome="judge_failed"} 1` + "\n",
	} {
		if !strings.Contains(string(m), line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	checkPrometheusText(t, string(m))
}

// TestOnJudgeFailureError checks --on-judge-failure error: a request with a
// failed judgment gets 503 with Retry-After, one without gets 200.
func TestOnJudgeFailureError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config, _ *sim.Config) { c.OnJudgeFailure = reward.OnJudgeFailureError })
	failing := "### Step 1: Add.\n2+3 = 5 " + sim.JudgeFailsMarker + "\n<answer>5</answer>"
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/get_reward", mustJSON(t, map[string]any{"query": []string{chatMLPrompt + rewardtest.MarkedResponse, chatMLPrompt + failing}}), http.StatusServiceUnavailable},
		{"/get_reward", mustJSON(t, map[string]any{"query": []string{chatMLPrompt + rewardtest.MarkedResponse}}), http.StatusOK},
		{"/score", mustJSON(t, map[string]any{"prompt": "What is 2+3?", "response": failing}), http.StatusServiceUnavailable},
		{"/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": failing}}}), http.StatusServiceUnavailable},
		{"/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": []string{rewardtest.MarkedResponse, failing}}), http.StatusServiceUnavailable},
		{"/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": []string{rewardtest.MarkedResponse}}), http.StatusOK},
		{"/verify", verifyBody(t, failing, map[string]any{"problem_id": "sum-2-3"}), http.StatusServiceUnavailable},
		{"/verify", verifyBody(t, rewardtest.MarkedResponse, map[string]any{"problem_id": "sum-2-3"}), http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.path, rec.Code, rec.Body, tc.code)
		}
		if tc.code == http.StatusServiceUnavailable && (rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "judge")) {
			t.Errorf("%s: 503 without Retry-After or without naming the judge: %v %s", tc.path, rec.Header(), rec.Body)
		}
	}
}

// TestOnJudgeFailureErrorORS: under --on-judge-failure error an ORS answer
// whose judgment failed is a RunToolError naming the judge, and the episode
// takes the answer again.
func TestOnJudgeFailureErrorORS(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config, _ *sim.Config) { c.OnJudgeFailure = reward.OnJudgeFailureError })
	e := openEpisode(t, orsDo(h.do), map[string]any{"split": "train", "index": 0})
	failing := "### Step 1: Add.\n2+3 = 5 " + sim.JudgeFailsMarker + "\n<answer>5</answer>"
	if ok, _, msg := e.answer(failing); ok || !strings.Contains(msg, "the judge failed") || !strings.Contains(msg, "retry") {
		t.Errorf("a failed judgment: ok %v %q, want a RunToolError naming the judge", ok, msg)
	}
	if ok, out, msg := e.answer(rewardtest.MarkedResponse); !ok || !out.Finished || !rewardtest.Near(*out.Reward, markedSRaRScore) {
		t.Errorf("the answer again: ok %v %+v %s", ok, out, msg)
	}
}
