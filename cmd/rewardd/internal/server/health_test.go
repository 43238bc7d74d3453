package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// healthAnswer is the body of GET /healthz.
type healthAnswer struct {
	OK     bool   `json:"ok"`
	Status string `json:"status"`
	Judge  struct {
		Breaker      string  `json:"breaker"`
		FailureRatio float64 `json:"failure_ratio_1m"`
		Judged       int64   `json:"judged_1m"`
		Stalled      int64   `json:"stalled_calls"`
	} `json:"judge"`
}

func health(t *testing.T, h *harness) healthAnswer {
	t.Helper()
	code, out := h.do(http.MethodGet, "/healthz", "")
	var got healthAnswer
	if err := json.Unmarshal(out, &got); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz: %d %s (%v)", code, out, err)
	}
	return got
}

// TestGarbageJudgeIsSeen: a judge whose every reply is unusable (it
// answers, so the breaker stays closed) pays the failure policy with
// judge_ok false and the reason in judge_error; it is logged, at most one
// line per logEvery however many fail; and /healthz says degraded from the
// first judgment on: a handful of failed judgments is not "ok" because
// fewer than some count were made.
func TestGarbageJudgeIsSeen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		h    func(t *testing.T) *harness
		body func(i int) string
	}{
		{"satisfaction judge", func(t *testing.T) *harness {
			return newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(_ *Config, s *sim.Config) { s.Faults.Malformed = 1 })
		}, func(i int) string {
			return mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": fmt.Sprintf("%s (%d)", rewardtest.MarkedResponse, i)}}})
		}},
		{"grounded judge", func(t *testing.T) *harness {
			labs := rewardtest.GroundedLabels(t)
			h, _ := groundedHarness(t, labs, sim.Config{Faults: sim.Faults{Malformed: 1}})
			h.srv.log = slog.New(slog.NewTextHandler(h.logs, nil))
			return h
		}, func(i int) string {
			return mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": schema.QuestionID("0123456789abcdef", 0), "response": fmt.Sprintf("%s (%d)", rewardtest.Scored3, i)}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h(t)
			for i := range 3 {
				var got scoreAnswer
				h.post("/v1/score", tc.body(i), &got)
				r := got.Results[0]
				if r.JudgeOK || r.Error != "" || r.Reward != 0 || !strings.Contains(r.JudgeError, "judge") {
					t.Errorf("scored with a garbage judge: %+v; want judge_ok false, reward 0, why in judge_error", r)
				}
			}
			got := health(t, h)
			if got.Status != "degraded" || got.Judge.FailureRatio != 1 || got.Judge.Judged != 3 || got.Judge.Breaker != "closed" {
				t.Errorf("/healthz after 3 failed judgments of 3: %+v; want degraded at ratio 1", got)
			}
			if n := strings.Count(h.logs.String(), "judgments failed"); n != 1 {
				t.Errorf("%d log lines about the failed judgments, want 1 (rate-limited):\n%s", n, h.logs)
			}
			if !strings.Contains(h.logs.String(), "judge_error=") {
				t.Errorf("the log line does not say why:\n%s", h.logs)
			}
		})
	}
}

// TestHungJudgeIsSeen: a judge that takes requests and never answers is
// seen by /healthz within StallAfter, not after the judge timeout: calls
// outstanding while no judge call has finished for StallAfter count as
// failed judgments, in /healthz and /metrics; once the judge answers,
// health is ok again.
// It runs in fake time (synctest): the clock moves only while every
// goroutine waits, so the calls are young at the first look and past
// StallAfter at the second however loaded the machine.
func TestHungJudgeIsSeen(t *testing.T) { synctest.Test(t, hungJudgeIsSeen) }

func hungJudgeIsSeen(t *testing.T) {
	const stallAfter = 50 * time.Millisecond
	g := newGate()
	h := newHarnessVia(t, []schema.Label{rewardtest.DemoLabel()}, g.wrap, func(c *Config, _ *sim.Config) {
		c.Timeout, c.StallAfter = time.Hour, stallAfter
		c.AllAtOnce = true // both calls in flight at once, not the second after the first
	})
	defer g.release()
	held := "### Step 1: Add.\n2+3 = 5. " + holdMarker + "\n<answer>5</answer>"
	done := make(chan int, 1)
	go func() {
		code, _ := h.do(http.MethodPost, "/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{
			{"problem_id": "sum-2-3", "response": held}, {"problem_id": "sum-2-3", "response": held + " (2)"}}}))
		done <- code
	}()
	<-g.held
	<-g.held
	if got := health(t, h); got.Status != "ok" {
		t.Errorf("/healthz while the calls are young: %+v; want ok", got)
	}
	time.Sleep(3 * stallAfter)
	got := health(t, h)
	if got.Status != "degraded" || got.Judge.Stalled != 2 || got.Judge.FailureRatio != 1 || got.Judge.Breaker != "closed" {
		t.Errorf("/healthz with two calls outstanding past %s: %+v; want degraded, 2 stalled, ratio 1", stallAfter, got)
	}
	_, m := h.do(http.MethodGet, "/metrics", "")
	for _, line := range []string{"rewardd_judge_calls_stalled 2\n", "rewardd_judge_failure_ratio 1\n"} {
		if !strings.Contains(string(m), line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	g.release()
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the held request: %d", code)
	}
	if got := health(t, h); got.Status != "ok" || got.Judge.Stalled != 0 || got.Judge.FailureRatio != 0 {
		t.Errorf("/healthz once the judge answered: %+v; want ok", got)
	}
}
