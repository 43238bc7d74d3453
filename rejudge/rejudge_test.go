package rejudge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/schema"
)

// rejudgeConfig asks the simulated endpoint srv, in process.
func rejudgeConfig(srv *sim.Server, cache string, sample int, seed uint64) Config {
	return Config{
		BaseURL: "http://simulated.invalid/v1", APIKey: "sk-test-secret-0123", Model: "simulated",
		Sample: sample, Seed: seed, CachePath: cache, Repairs: 4, Concurrency: 4, MaxAttempts: 6,
		AttemptTimeout: 10 * time.Second, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, HTTPClient: &http.Client{Transport: srv.Transport()}, Logger: quiet(),
	}
}

// TestRejudgeEndToEnd re-judges a sample through llm against the simulated
// endpoint, which answers 429s and malformed replies on some attempts, then
// flips stored verdicts of chosen drawn items and re-judges from the cache:
// every flip moves exactly one item between agreement and disagreement,
// and no request reaches the endpoint.
func TestRejudgeEndToEnd(t *testing.T) {
	t.Parallel()
	const seed = 3
	t.Logf("sample seed %d, simulated endpoint seed 5", seed)
	recs := corpusfix.Records()[:30]
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 8)
	srv := sim.New(sim.Config{Seed: 5, InvalidRate: 0.3, KeepLog: true, FaultsByRequest: true,
		Faults: sim.Faults{RateLimited: 0.15, Malformed: 0.15, RetryAfter: time.Millisecond}})
	cache := filepath.Join(t.TempDir(), "cache.db")
	first := rejudge(t, dir, rejudgeConfig(srv, cache, 40, seed))

	s := first.Sample
	if s.Drawn != 40 || s.Judged != 40 || s.Failed != 0 || s.Stopped != "" {
		t.Fatalf("sample %+v; want 40 drawn and judged", s)
	}
	var rateLimited, malformed int64
	for _, e := range srv.Log() {
		if e.Kind != sim.KindJudgeBatch {
			t.Errorf("request of kind %s, want judge_batch", e.Kind)
		}
		switch e.Fault {
		case sim.FaultRateLimited:
			rateLimited++
		case sim.FaultMalformed:
			malformed++
		}
	}
	u := first.LLM
	if u.Requests != int64(s.Records)+u.Repairs || u.CacheHits != 0 {
		t.Errorf("llm usage %+v: want one live request per record (%d) plus one per repair", u, s.Records)
	}
	if u.Retries != rateLimited || u.Repairs != malformed || srv.Count() != int64(s.Records)+rateLimited+malformed {
		t.Errorf("llm usage %+v; the endpoint saw %d requests, %d rate limited, %d malformed", u, srv.Count(), rateLimited, malformed)
	}
	if rateLimited == 0 || malformed == 0 {
		t.Errorf("the endpoint injected %d 429s and %d malformed replies; the test needs both", rateLimited, malformed)
	}
	if u.PromptTokens == 0 || u.CompletionTokens == 0 {
		t.Errorf("no tokens counted: %+v", u)
	}
	a := first.Agreement
	if a.Items != 40 || int64(len(first.Disagreements)) != a.Items-a.Agree || a.Agree == a.Items {
		t.Fatalf("agreement %+v with %d disagreements listed; want 40 items and some disagreements", a, len(first.Disagreements))
	}

	// A cached malformed reply is repaired again, from the cache too.
	// Flip the stored verdicts of one agreeing and one disagreeing item.
	disagree := map[[2]any]bool{}
	for _, d := range first.Disagreements {
		disagree[[2]any{d.RecordID, d.ItemID}] = true
	}
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	drawn, _, _, err := audit.Sample(context.Background(), in, 40, seed, true)
	if err != nil {
		t.Fatal(err)
	}
	var flipAgree, flipDisagree *audit.SampleItem
	for i := range drawn {
		switch d := &drawn[i]; {
		case disagree[[2]any{d.RecordID, d.ItemID}] && flipDisagree == nil:
			flipDisagree = d
		case !disagree[[2]any{d.RecordID, d.ItemID}] && flipAgree == nil:
			flipAgree = d
		}
	}
	flipped := dir + "-flipped"
	corpusfix.WriteRun(t, flipped, flipVerdicts(recs, flipAgree, flipDisagree), 8)
	before := srv.Count()
	second := rejudge(t, flipped, rejudgeConfig(srv, cache, 40, seed))
	if srv.Count() != before || second.LLM.Requests != 0 || second.LLM.CacheHits != int64(s.Records)+u.Repairs || second.LLM.CostUSD != 0 {
		t.Errorf("the second rejudge reached the endpoint: %d requests, usage %+v", srv.Count()-before, second.LLM)
	}
	if b := second.Agreement; b.Items != 40 || b.Agree != a.Agree {
		t.Errorf("after one flip each way: %d of %d agree, want %d", b.Agree, b.Items, a.Agree)
	}
	moved := map[[2]any]bool{}
	for _, d := range second.Disagreements {
		moved[[2]any{d.RecordID, d.ItemID}] = true
	}
	if !moved[[2]any{flipAgree.RecordID, flipAgree.ItemID}] || moved[[2]any{flipDisagree.RecordID, flipDisagree.ItemID}] {
		t.Errorf("the flipped items did not change sides: %v", second.Disagreements)
	}
	noSecret(t, first)
}

// flipVerdicts returns a copy of recs with the stored verdicts of items negated.
func flipVerdicts(recs []schema.Record, items ...*audit.SampleItem) []schema.Record {
	out := make([]schema.Record, len(recs))
	for i, r := range recs {
		r.Rubric = append([]schema.Item(nil), r.Rubric...)
		for _, it := range items {
			if r.ID != it.RecordID {
				continue
			}
			for k := range r.Rubric {
				if r.Rubric[k].ID == it.ItemID {
					r.Rubric[k].Valid = ptr(!*r.Rubric[k].Valid)
				}
			}
		}
		out[i] = r
	}
	return out
}

func rejudge(t *testing.T, dir string, cfg Config) *audit.AgreementReport {
	t.Helper()
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), in, cfg)
	if err != nil {
		t.Fatalf("Rejudge: %v", err)
	}
	return rep
}

// noSecret checks the key is nowhere in the report, and the text fits Width.
func noSecret(t *testing.T, rep *audit.AgreementReport) {
	t.Helper()
	for _, write := range []func(io.Writer) error{rep.WriteText, rep.WriteJSON} {
		if out := render(t, write); bytes.Contains(out, []byte("sk-test-secret")) {
			t.Errorf("the API key is in the report")
		}
	}
	if text := string(render(t, rep.WriteText)); strings.Contains(text, "seed 000") {
		t.Errorf("the text report says \"seed 000\", which reads as the draw's seed:\n%s", text)
	}
	for i, line := range strings.Split(string(render(t, rep.WriteText)), "\n") {
		if n := len([]rune(line)); n > audit.Width {
			t.Errorf("text line %d is %d columns wide: %q", i+1, n, line)
		}
	}
}

// TestRejudgeBudgetStop: with a budget the first request exhausts, the
// rejudge stops sending, says why, and counts the rest as failed.
func TestRejudgeBudgetStop(t *testing.T) {
	t.Parallel()
	dir := sharedRecords30Run(t)
	srv := sim.New(sim.Config{Seed: 5})
	cfg := rejudgeConfig(srv, "", 40, 1)
	cfg.Concurrency = 1
	cfg.Price = llm.Price{PromptPerMTok: 1000, CompletionPerMTok: 1000}
	cfg.MaxCostUSD = 0.001
	rep := rejudge(t, dir, cfg)
	s := rep.Sample
	if s.Stopped == "" || !strings.Contains(string(s.Stopped), "budget") {
		t.Errorf("stopped %q; want the budget named", s.Stopped)
	}
	if s.Judged == 0 || s.Failed == 0 || s.Judged+s.Failed != s.Drawn || srv.Count() >= int64(s.Records) {
		t.Errorf("sample %+v after %d requests; want a stop after the first ones", s, srv.Count())
	}
	if rep.LLM.CostUSD < cfg.MaxCostUSD || rep.Agreement.Items != int64(s.Judged) {
		t.Errorf("usage %+v, agreement over %d items", rep.LLM, rep.Agreement.Items)
	}
	if text := string(render(t, rep.WriteText)); !strings.Contains(text, "cost $") || !strings.Contains(text, "stopped early") {
		t.Errorf("the text report shows no cost or no stop:\n%s", text)
	}
	noSecret(t, rep)
}

// TestRejudgeFatal: a refused key ends the rejudge with an error that
// does not hold the key.
func TestRejudgeFatal(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:10], 8)
	cfg := rejudgeConfig(sim.New(sim.Config{}), "", 10, 1)
	cfg.HTTPClient = &http.Client{Transport: refuse{}}
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), in, cfg)
	if err == nil || llm.ClassOf(err) != llm.ClassFatal || strings.Contains(err.Error(), "sk-test-secret") {
		t.Errorf("Rejudge against a refusing endpoint: %v; want a fatal error without the key", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("the error is a cancellation: %v", err)
	}
}

// refuse answers every request with 401, as an endpoint does for a bad key.
type refuse struct{}

func (refuse) RoundTrip(req *http.Request) (*http.Response, error) {
	body := `{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}`
	return &http.Response{StatusCode: http.StatusUnauthorized, Status: "401 Unauthorized", Request: req,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
}
