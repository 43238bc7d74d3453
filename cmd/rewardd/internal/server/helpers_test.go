package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/reward/judge"
	"github.com/rubricforge/rubricforge/schema"
)

func labelJSON(t testing.TB, l schema.Label) string {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markedSRaR is rewardtest.MarkedResponse's SRaR result under demoLabel: r_base 1,
// suggest 0.8/2, bonus 1; the range is [-1, 2.8].
const (
	markedSRaRReward = 2.4
	markedSRaRScore  = 3.4 / 3.8
)

// harness is a Server judged by an in-process simulated endpoint.
type harness struct {
	t         testing.TB
	srv       *Server
	simulator *sim.Server
	judge     *judge.Judge
	logs      *bytes.Buffer
	labels    []schema.Label
}

type harnessOpt func(*Config, *sim.Config)

func newHarness(t testing.TB, labels []schema.Label, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessVia(t, labels, nil, opts...)
}

// newHarnessVia is newHarness with the judge's transport wrapped by wrap
// (nil: the simulated endpoint's own).
func newHarnessVia(t testing.TB, labels []schema.Label, wrap func(http.RoundTripper) http.RoundTripper, opts ...harnessOpt) *harness {
	t.Helper()
	cfg := Config{}
	simCfg := sim.Config{KeepLog: true}
	for _, o := range opts {
		o(&cfg, &simCfg)
	}
	simulator := sim.New(simCfg)
	meter := llm.NewMeter(nil, llm.Budget{})
	transport := simulator.Transport()
	if wrap != nil {
		transport = wrap(transport)
	}
	j := newTestJudge(t, transport, 4, meter, judge.Options{Model: "simulated"})
	logs := &bytes.Buffer{}
	cfg.Judge, cfg.Meter = j, meter
	if cfg.Prompts == nil {
		cfg.Prompts = rewardtest.Prompts(t) // what New loads, parsed once
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if labels != nil {
		cfg.Index, _ = NewIndex(labels)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, simulator: simulator, judge: j, logs: logs, labels: labels}
}

// newTestJudge is a judge with the embedded templates over transport (the
// simulated endpoint's, or one wrapping it), asking each request up to
// attempts times with millisecond back-offs.
func newTestJudge(t testing.TB, transport http.RoundTripper, attempts int, meter *llm.Meter, opt judge.Options) *judge.Judge {
	t.Helper()
	j, err := judge.New(rewardtest.Client(t, transport, attempts, meter), rewardtest.Prompts(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// do sends a request to the handler and returns the status and body.
func (h *harness) do(method, path, body string, header ...string) (int, []byte) {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	out, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, out
}

// post sends body and decodes a 200 answer into v.
func (h *harness) post(path, body string, v any) {
	h.t.Helper()
	code, out := h.do(http.MethodPost, path, body)
	if code != http.StatusOK {
		h.t.Fatalf("POST %s: %d %s", path, code, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		h.t.Fatalf("POST %s: decoding %s: %v", path, out, err)
	}
}

// wantBadRequest fails the test unless POST path with body is a 400 whose
// error names field.
func (h *harness) wantBadRequest(path, body, field string) {
	h.t.Helper()
	code, out := h.do(http.MethodPost, path, body)
	var e struct{ Error string }
	if code != http.StatusBadRequest || json.Unmarshal(out, &e) != nil || !strings.Contains(e.Error, field) {
		h.t.Errorf("POST %s %s: %d %s; want 400 naming %q", path, body, code, out, field)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// judged is text analyzed against ground truth 5 with verdicts (nil: its
// judgment failed).
func judged(text string, verdicts []schema.Satisfaction) reward.Rollout {
	r := reward.Analyze(text, "5")
	r.Verdicts = verdicts
	if verdicts == nil {
		r.JudgeErr = "the judge failed"
	}
	return r
}
