package reward

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/llmtest"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// demoLabel is the rubric the handler tests score against: two SUGGESTs, a
// PITFALL, a BONUS and an ANSWER item for "What is 2+3?".
func demoLabel() schema.Label {
	l := *testLabel(srarItems())
	l.ID, l.DataSource = "sum-2-3", "rubricforge-tests"
	return l
}

func labelJSON(t testing.TB, l schema.Label) string {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markedResponse is a correct, formatted two-step response whose simulated
// verdicts are: items 1 and 4 satisfied at step 1, item 5 at step 2, the
// others unsatisfied (step -1).
var markedResponse = "### Step 1: Add.\n2+3 = 5. " + llmtest.SatisfiedMarker(1, 4) +
	"\n### Step 2: Check.\n5-3 = 2. " + llmtest.SatisfiedMarker(5) + "\n<answer>5</answer>"

// markedSRaR is markedResponse's SRaR result under demoLabel: r_base 1,
// suggest 0.8/2, bonus 1; the range is [-1, 2.8].
const (
	markedSRaRReward = 2.4
	markedSRaRScore  = 3.4 / 3.8
)

// harness is a Server judged by an in-process simulated endpoint.
type harness struct {
	t      testing.TB
	srv    *Server
	sim    *llmtest.Server
	judge  *Judge
	logs   *bytes.Buffer
	labels []schema.Label
}

type harnessOpt func(*Config, *llmtest.Config)

func newHarness(t testing.TB, labels []schema.Label, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessVia(t, labels, nil, opts...)
}

// newHarnessVia is newHarness with the judge's transport wrapped by wrap
// (nil: the simulated endpoint's own).
func newHarnessVia(t testing.TB, labels []schema.Label, wrap func(http.RoundTripper) http.RoundTripper, opts ...harnessOpt) *harness {
	t.Helper()
	cfg := Config{}
	simCfg := llmtest.Config{KeepLog: true}
	for _, o := range opts {
		o(&cfg, &simCfg)
	}
	sim := llmtest.New(simCfg)
	meter := llm.NewMeter(nil, llm.Budget{})
	transport := sim.Transport()
	if wrap != nil {
		transport = wrap(transport)
	}
	judge := newTestJudge(t, transport, 4, meter, JudgeOptions{Model: "simulated"})
	logs := &bytes.Buffer{}
	cfg.Judge, cfg.Meter = judge, meter
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if labels != nil {
		cfg.Index, _ = NewIndex(labels)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, sim: sim, judge: judge, logs: logs, labels: labels}
}

// newTestJudge is a judge with the embedded templates over transport (the
// simulated endpoint's, or one wrapping it), asking each request up to
// attempts times with millisecond back-offs.
func newTestJudge(t testing.TB, transport http.RoundTripper, attempts int, meter *llm.Meter, opt JudgeOptions) *Judge {
	t.Helper()
	client, err := llm.NewClient(llm.Endpoint{BaseURL: "http://simulated.invalid/v1"},
		llm.Options{HTTPClient: &http.Client{Transport: transport}, MaxAttempts: attempts, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		nil, meter)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	judge, err := NewJudge(client, ps, opt)
	if err != nil {
		t.Fatal(err)
	}
	return judge
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

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
