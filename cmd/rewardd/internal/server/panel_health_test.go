package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

// panelMember is a judge of a test panel: its simulated model ("truth",
// "contrary", "broken" as in newPanelHarness) and what its calls go
// through (nil: the simulator).
type panelMember struct {
	model string
	wrap  func(http.RoundTripper) http.RoundTripper
}

// newPanelHarnessOf is a Server judged by a panel of members, its Config
// set by cfg.
func newPanelHarnessOf(t testing.TB, labels []schema.Label, cfg func(*Config), members ...panelMember) *harness {
	t.Helper()
	simulator := sim.New(sim.Config{Judges: map[string]sim.JudgeProfile{"contrary": {Flip: 1}, "broken": {Fail: 1}}})
	meter := llm.NewMeter(nil, llm.Budget{})
	judges := make([]*judge.Judge, len(members))
	for i, m := range members {
		transport := simulator.Transport()
		if m.wrap != nil {
			transport = m.wrap(transport)
		}
		judges[i] = newTestJudge(t, transport, 1, meter, judge.Options{Model: m.model, Name: m.model, Repairs: -1})
	}
	p, err := judge.NewPanel(judges)
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	c := Config{Judge: p, Meter: meter, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	c.Index, _ = NewIndex(labels)
	if cfg != nil {
		cfg(&c)
	}
	srv, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, simulator: simulator, judge: p, logs: logs, labels: labels}
}

// downJudge is a judge endpoint that refuses connections, counting the
// calls that reach it.
type downJudge struct{ calls *atomic.Int64 }

func (d downJudge) RoundTrip(*http.Request) (*http.Response, error) {
	d.calls.Add(1)
	return nil, errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
}

// hungJudge is a judge endpoint that takes requests and never answers: each
// call waits for its request's end, and the cause of that end is sent on
// causes.
type hungJudge struct{ causes chan error }

func (h hungJudge) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	h.causes <- context.Cause(r.Context())
	return nil, r.Context().Err()
}

// panelHealth is GET /healthz's panel part and status code.
type panelHealth struct {
	code   int
	Status string `json:"status"`
	Judges []struct {
		Name         string  `json:"name"`
		Breaker      string  `json:"breaker"`
		FailureRatio float64 `json:"failure_ratio_1m"`
	} `json:"judges"`
	Degraded []string `json:"degraded"`
}

func getPanelHealth(t *testing.T, h *harness, query string) panelHealth {
	t.Helper()
	code, out := h.do(http.MethodGet, "/healthz"+query, "")
	var got panelHealth
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("/healthz%s: %d %s", query, code, out)
	}
	got.code = code
	return got
}

// memberOf is the health of the panel judge named name.
func (p panelHealth) memberOf(name string) (breaker string, ratio float64, ok bool) {
	for _, j := range p.Judges {
		if j.Name == name {
			return j.Breaker, j.FailureRatio, true
		}
	}
	return "", 0, false
}

// TestPanelMemberBreakerAndHealth: over HTTP, a panel member that is down
// (connections refused) gets its own breaker: after --judge-breaker-failures
// outages in a row it is no longer asked, while the panel keeps answering
// with judge_ok true (the member's vote against the response). A member
// that answers garbage keeps its breaker closed. /healthz is degraded
// (200; 503 with ?strict=1) and names each such member, with its breaker
// and failure ratio; /metrics shows each member's breaker.
func TestPanelMemberBreakerAndHealth(t *testing.T) {
	t.Parallel()
	var downCalls atomic.Int64
	h := newPanelHarnessOf(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config) { c.Breaker.Failures = 2 },
		panelMember{model: "truth"},
		panelMember{model: "down", wrap: func(http.RoundTripper) http.RoundTripper { return downJudge{&downCalls} }},
		panelMember{model: "broken"})
	for i := range 5 {
		var got scoreAnswer
		h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": fmt.Sprintf("%s (%d)", rewardtest.MarkedResponse, i)}}}), &got)
		if !got.Results[0].JudgeOK {
			t.Fatalf("response %d: judge_ok false (%s); the truth judge answered", i, got.Results[0].JudgeError)
		}
	}
	if n := downCalls.Load(); n != 2 {
		t.Errorf("the down judge was called %d times for 5 responses; its breaker should open after 2 outages", n)
	}
	got := getPanelHealth(t, h, "")
	if got.code != http.StatusOK || got.Status != "degraded" {
		t.Errorf("/healthz: %d %q; want 200 degraded", got.code, got.Status)
	}
	if b, _, ok := got.memberOf("down"); !ok || b != "open" {
		t.Errorf("/healthz: judge down's breaker %q (listed %v); want open: %+v", b, ok, got)
	}
	if b, ratio, ok := got.memberOf("broken"); !ok || b != "closed" || ratio != 1 {
		t.Errorf("/healthz: judge broken: breaker %q, failure ratio %v (listed %v); want closed, 1", b, ratio, ok)
	}
	if b, ratio, ok := got.memberOf("truth"); !ok || b != "closed" || ratio != 0 {
		t.Errorf("/healthz: judge truth: breaker %q, failure ratio %v (listed %v); want closed, 0", b, ratio, ok)
	}
	if why := strings.Join(got.Degraded, "; "); !strings.Contains(why, "down") || !strings.Contains(why, "broken") || strings.Contains(why, "truth") {
		t.Errorf("/healthz degraded because %q; want judges down and broken named, not truth", why)
	}
	if strict := getPanelHealth(t, h, "?strict=1"); strict.code != http.StatusServiceUnavailable || strict.Status != "degraded" {
		t.Errorf("/healthz?strict=1: %d %q; want 503 degraded", strict.code, strict.Status)
	}
	_, m := h.do(http.MethodGet, "/metrics", "")
	for _, line := range []string{`rewardd_panel_judge_breaker_state{judge="down",state="open"} 1`, `rewardd_panel_judge_breaker_state{judge="truth",state="closed"} 1`} {
		if !strings.Contains(string(m), line+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", line, grepLines(string(m), "panel"))
		}
	}
}

// TestPanelMemberDeadline: over HTTP, a panel member that takes requests
// and never answers is cut off PanelMemberDeadline after another member
// answered, not at the request's timeout: its call ends with
// judge.ErrMemberLate, the panel decides without it (its vote against the
// response, judge_ok true), its breaker counts the cut as an outage and,
// after --judge-breaker-failures of them, it is not asked.
func TestPanelMemberDeadline(t *testing.T) {
	t.Parallel()
	hung := hungJudge{causes: make(chan error, 16)}
	h := newPanelHarnessOf(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config) {
		c.Breaker.Failures, c.Timeout, c.PanelMemberDeadline = 2, 3*time.Second, 10*time.Millisecond
	}, panelMember{model: "truth"}, panelMember{model: "hung", wrap: func(http.RoundTripper) http.RoundTripper { return hung }})
	for i := range 4 {
		var got scoreAnswer
		h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": fmt.Sprintf("%s (%d)", rewardtest.MarkedResponse, i)}}}), &got)
		if !got.Results[0].JudgeOK {
			t.Fatalf("response %d: judge_ok false (%s); the truth judge answered", i, got.Results[0].JudgeError)
		}
	}
	close(hung.causes)
	n := 0
	for cause := range hung.causes {
		n++
		if !errors.Is(cause, judge.ErrMemberLate) {
			t.Errorf("the hung judge's call ended by %v; want the member deadline", cause)
		}
	}
	// A cut may come before the call reaches the endpoint (the deadline
	// runs from the truth judge's answer); either way it is an outage.
	if n > 2 {
		t.Errorf("the hung judge was asked %d times for 4 responses; its breaker should open after 2 cuts", n)
	}
	if b, _, ok := getPanelHealth(t, h, "").memberOf("hung"); !ok || b != "open" {
		t.Errorf("/healthz: judge hung's breaker %q (listed %v); want open", b, ok)
	}
	_, m := h.do(http.MethodGet, "/metrics", "")
	if line := `rewardd_panel_judge_failures_total{judge="hung"} 4`; !strings.Contains(string(m), line+"\n") {
		t.Errorf("/metrics lacks %q (2 cut off, 2 not asked):\n%s", line, grepLines(string(m), "hung"))
	}
}

// TestPanelFailedMemberKeepsAPitfallsStep: a PITFALL a panel counts as
// fallen into only because a member failed (the other says it is avoided)
// is not put in no step (-1, which joins no SRaR step group): it is in
// the whole solution, step 0, charged to the response's compared steps.
func TestPanelFailedMemberKeepsAPitfallsStep(t *testing.T) {
	t.Parallel()
	h := newPanelHarnessOf(t, []schema.Label{rewardtest.DemoLabel()}, nil, panelMember{model: "truth"}, panelMember{model: "broken"})
	var got scoreAnswer
	h.post("/v1/score", mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}}), &got)
	for _, it := range got.Results[0].Items {
		if it.ID == 3 && (!it.Satisfied || it.Step != 0) {
			t.Errorf("the PITFALL a failed member decided: satisfied %v at step %d; want fallen into at step 0", it.Satisfied, it.Step)
		}
	}
}
