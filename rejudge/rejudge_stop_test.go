package rejudge

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/llm"
)

// refused answers every request as a port where nothing listens does.
type refused struct{ n *atomic.Int64 }

func (r refused) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n.Add(1)
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// TestRejudgeNothingListens: against a URL where nothing listens, rejudge
// stops as distill run does, after a few requests in a row could not
// connect, with one error that says so and no warning per record.
func TestRejudgeNothingListens(t *testing.T) {
	t.Parallel()
	dir := sharedRecords30Run(t)
	var logs bytes.Buffer
	var sent atomic.Int64
	cfg := rejudgeConfig(sim.New(sim.Config{}), "", 100, 1)
	cfg.Concurrency = 16
	cfg.HTTPClient = &http.Client{Transport: refused{&sent}}
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), in, cfg)
	if err == nil || !strings.Contains(err.Error(), "nothing answers at http://simulated.invalid/v1") || !strings.Contains(err.Error(), "could not connect") {
		t.Fatalf("Rejudge against nothing: %v; want it to say nothing answers", err)
	}
	if logs.Len() > 0 {
		t.Errorf("warnings besides the error:\n%s", logs.String())
	}
	// 16 records in flight when the third failed; each tried 6 times
	if n := sent.Load(); n > 16*6 {
		t.Errorf("%d attempts sent; the rejudge should stop once 3 records in a row could not connect", n)
	}
}

// TestRejudgeBudgetHoldsAtConcurrency: 16 requests at once on a budget of
// about three and a half requests: the spend stays within the budget (it
// used to be every request in flight, 16 of them), some items are judged,
// and the stop names the budget.
func TestRejudgeBudgetHoldsAtConcurrency(t *testing.T) {
	dir := sharedRecords30Run(t)
	srv := sim.New(sim.Config{Seed: 5, Latency: 5 * time.Millisecond})
	cfg := rejudgeConfig(srv, "", 100, 1)
	cfg.Concurrency = 16
	cfg.Price = llm.Price{PromptPerMTok: 10, CompletionPerMTok: 40}
	full := rejudge(t, dir, cfg)
	perRequest := full.LLM.CostUSD / float64(full.LLM.Requests)

	cfg.MaxCostUSD = 3.5 * perRequest
	rep := rejudge(t, dir, cfg)
	s := rep.Sample
	// The gate reserves each request's estimate (its prompt, and the
	// longest completion the stage has had), so a request whose answer
	// runs longer than any before it can carry the spend past the budget
	// by part of one request (seen: 2 runs in 20, $0.0325 and $0.0290 on
	// $0.0289); what must never happen again is every request in flight
	// passing it together (16 of them, about $0.13).
	if rep.LLM.CostUSD > cfg.MaxCostUSD+perRequest {
		t.Errorf("spent $%.6f on a $%.6f budget (%d requests of about $%.6f): more than one request past it", rep.LLM.CostUSD, cfg.MaxCostUSD, rep.LLM.Requests, perRequest)
	}
	if s.Judged == 0 || s.Failed == 0 || !strings.Contains(string(s.Stopped), "budget") {
		t.Errorf("sample %+v; want some judged, the rest stopped by the budget", s)
	}
	t.Logf("budget $%.6f: %d requests, $%.6f spent; %d of %d items judged", cfg.MaxCostUSD, rep.LLM.Requests, rep.LLM.CostUSD, s.Judged, s.Drawn)
}

// TestRejudgeInterrupted: Ctrl-C during a rejudge ends it with the figures
// of the items judged so far, marked as stopped, and the interruption as
// the error.
func TestRejudgeInterrupted(t *testing.T) {
	dir := sharedRecords30Run(t)
	srv := sim.New(sim.Config{Seed: 5, Latency: 20 * time.Millisecond})
	cfg := rejudgeConfig(srv, "", 100, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for srv.Count() < 8 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, in, cfg)
	if !errors.Is(err, context.Canceled) || rep == nil {
		t.Fatalf("interrupted rejudge: report %v, error %v", rep != nil, err)
	}
	s := rep.Sample
	if rep.Agreement == nil || s.Judged == 0 || rep.Agreement.Items != int64(s.Judged) || s.Judged+s.Failed != s.Drawn ||
		!strings.Contains(string(s.Stopped), "interrupted") {
		t.Errorf("partial report: sample %+v, agreement %+v", s, rep.Agreement)
	}
}

// TestRejudgeUnparseableReplies: replies that never parse fail their own
// records only; the rejudge goes on and counts them as failed.
func TestRejudgeUnparseableReplies(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:20], 8)
	srv := sim.New(sim.Config{Seed: 5, Faults: sim.Faults{Malformed: 0.5}})
	cfg := rejudgeConfig(srv, "", 60, 1)
	cfg.Repairs = 0
	rep := rejudge(t, dir, cfg)
	if s := rep.Sample; s.Judged == 0 || s.Failed == 0 || s.Judged+s.Failed != s.Drawn {
		t.Errorf("sample %+v; want some records judged and the unparseable ones failed", s)
	}
}

// TestRejudgeCachedAnswersSpendNoBudget: a rejudge whose answers are all
// in the cache judges every item on a budget smaller than one request: an
// answer from the cache costs nothing, so the budget (reserved by the llm
// client for live attempts only) never stops it, as the budget stop's
// message promises ("answers the judged ones from the cache").
func TestRejudgeCachedAnswersSpendNoBudget(t *testing.T) {
	t.Parallel()
	dir := sharedRecords30Run(t)
	srv := sim.New(sim.Config{Seed: 5})
	cache := filepath.Join(t.TempDir(), "cache.db")
	cfg := rejudgeConfig(srv, cache, 40, 1)
	cfg.Price = llm.Price{PromptPerMTok: 1000, CompletionPerMTok: 1000}
	full := rejudge(t, dir, cfg)
	if full.Sample.Judged != full.Sample.Drawn {
		t.Fatalf("filling the cache: sample %+v", full.Sample)
	}
	asked := srv.Count()
	cfg.MaxCostUSD = 0.001 // less than any one request
	again := rejudge(t, dir, cfg)
	if s := again.Sample; s.Judged != s.Drawn || s.Stopped != "" {
		t.Errorf("from the cache on a small budget: sample %+v; want every item judged, no stop", s)
	}
	if sent := srv.Count() - asked; sent != 0 || again.LLM.CostUSD != 0 {
		t.Errorf("from the cache: %d requests sent, $%g spent; want none", sent, again.LLM.CostUSD)
	}
}
