package reward

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/schema"
)

// everyJudgment is every verdict set a judge could return on items: each
// item satisfied or not, at step 1.
func everyJudgment(items []schema.Item) [][]schema.Satisfaction {
	var out [][]schema.Satisfaction
	for mask := range 1 << len(items) {
		v := make([]schema.Satisfaction, len(items))
		for j, it := range items {
			v[j] = sat(it.ID, mask&(1<<j) != 0, 1)
		}
		out = append(out, v)
	}
	return out
}

// TestFailedJudgmentPaysTheFloor checks, for every scheme, rubric and kind
// of response, that a failed judgment gets exactly the lowest reward any
// judgment of that response could give it: a policy that provokes judge
// failures (responses too long for the judge, text that breaks its JSON)
// must never earn more than a judged response.
func TestFailedJudgmentPaysTheFloor(t *testing.T) {
	p := DefaultParams()
	rubrics := map[string][]schema.Item{
		"srar":            srarItems(),
		"srar no pitfall": {item(1, schema.TypeSuggest, 1), item(2, schema.TypeBonus, 1), item(3, schema.TypeAnswer, 1)},
		"factual_process": {item(1, schema.TypeFactual, 3), item(2, schema.TypeFactual, 2), item(3, schema.TypeProcess, 1), item(4, schema.TypePitfall, 2)},
		"only factual":    {item(1, schema.TypeFactual, 1), item(2, schema.TypeFactual, 1)},
		"zero weights":    {item(1, schema.TypeFactual, 0), item(2, schema.TypeProcess, 0)},
	}
	responses := map[string]string{
		"correct, formatted": twoSteps,
		"wrong":              "### Step 1: Guess.\n2+3 = 6.\n<answer>6</answer>",
		"no format":          "It is 5, obviously.",
	}
	for rname, items := range rubrics {
		lab := testLabel(items)
		for tname, text := range responses {
			for _, scheme := range schema.Schemes {
				failed := judged(text, nil)
				got := Score(p, scheme, lab, &failed, nil)
				lowest, lowestScore := 0.0, 0.0
				for i, v := range everyJudgment(items) {
					r := judged(text, v)
					res := Score(p, scheme, lab, &r, nil)
					if i == 0 || res.Reward < lowest {
						lowest, lowestScore = res.Reward, res.Score
					}
				}
				if got.JudgeOK || !near(got.Reward, lowest) || !near(got.Score, lowestScore) {
					t.Errorf("%s, %s, %s: judge failed pays reward %v score %v (judge_ok %v); the lowest judged is %v %v",
						rname, tname, scheme, got.Reward, got.Score, got.JudgeOK, lowest, lowestScore)
				}
				sum := 0.0
				for _, c := range got.Components {
					sum += c
				}
				if scheme != schema.SchemeRGR && !near(sum, got.Reward) {
					t.Errorf("%s, %s, %s: components %v do not add up to %v", rname, tname, scheme, got.Components, got.Reward)
				}
			}
		}
	}
}

// TestOutcomePolicyKeepsTheAccuracyFallback checks --on-judge-failure
// outcome: the accuracy-only reward of the earlier releases.
func TestOutcomePolicyKeepsTheAccuracyFallback(t *testing.T) {
	p := DefaultParams()
	lab := testLabel(srarItems())
	failed := judged(twoSteps, nil)
	for scheme, want := range map[string]float64{schema.SchemeSRaR: 1, schema.SchemeRGR: 1, schema.SchemeGrounded: 0, schema.SchemeRLCER: 1, schema.SchemePAPO: 1} {
		if got := scoreWith(p, OnJudgeFailureOutcome, scheme, lab, &failed, nil); !near(got.Reward, want) {
			t.Errorf("%s: outcome policy pays %v, want %v", scheme, got.Reward, want)
		}
	}
}

// TestJudgeFailureRateIsReported checks that a batch with a failed judgment
// says so where a trainer and an operator look: every sample's extra_logs
// carries the batch's judge-failure rate, and /metrics the recent rate.
func TestJudgeFailureRateIsReported(t *testing.T) {
	h := newHarness(t, []schema.Label{demoLabel()})
	failing := "### Step 1: Add.\n2+3 = 5 " + llmtest.JudgeFailsMarker + "\n<answer>5</answer>"
	queries := []string{chatMLPrompt + markedResponse, chatMLPrompt + failing, chatMLPrompt + markedResponse + " ", chatMLPrompt + "<answer>5</answer>"}
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
	h := newHarness(t, []schema.Label{demoLabel()}, func(c *Config, _ *llmtest.Config) { c.OnJudgeFailure = OnJudgeFailureError })
	failing := "### Step 1: Add.\n2+3 = 5 " + llmtest.JudgeFailsMarker + "\n<answer>5</answer>"
	for _, tc := range []struct {
		path, body string
		code       int
	}{
		{"/get_reward", mustJSON(t, map[string]any{"query": []string{chatMLPrompt + markedResponse, chatMLPrompt + failing}}), http.StatusServiceUnavailable},
		{"/get_reward", mustJSON(t, map[string]any{"query": []string{chatMLPrompt + markedResponse}}), http.StatusOK},
		{"/score", mustJSON(t, map[string]any{"prompt": "What is 2+3?", "response": failing}), http.StatusServiceUnavailable},
		{"/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": failing}}}), http.StatusServiceUnavailable},
		{"/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": []string{markedResponse, failing}}), http.StatusServiceUnavailable},
		{"/v1/score_group", mustJSON(t, map[string]any{"problem_id": "sum-2-3", "responses": []string{markedResponse}}), http.StatusOK},
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
