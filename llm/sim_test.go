package llm_test

// Tests of the client against the simulated endpoint (internal/sim),
// in process and in fake time (testing/synctest): waits, limits and
// latencies are exact, and minutes of traffic take a fraction of a second.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
)

const simSeed = 7 // the simulated endpoint's seed; faults and latencies follow from it

var problems = []string{
	"A club has 24 members. In how many ways can a committee of 3 members be chosen?",
	"How many zeros does the decimal form of 2024! end with?",
	"Find the minimum value of x^2 + 6x + 4 over all real numbers x.",
	"Find the greatest common divisor of 1071 and 462.",
}

// rollouts returns n distinct rollout requests.
func rollouts(t testing.TB, n int) []llm.Request {
	t.Helper()
	ps, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([][]llm.Message, len(problems))
	for i, p := range problems {
		if msgs[i], err = ps.RolloutMessages(p); err != nil {
			t.Fatal(err)
		}
	}
	reqs := make([]llm.Request, n)
	for i := range reqs {
		seed := int64(i)
		reqs[i] = llm.Request{Stage: "rollout", Model: "sim", Messages: msgs[i%len(msgs)], Seed: &seed, SampleIndex: i}
	}
	return reqs
}

// simClient is a client of srv through its in-process transport.
func simClient(t testing.TB, srv *sim.Server, opt llm.Options, meter *llm.Meter) *llm.Client {
	t.Helper()
	opt.HTTPClient = &http.Client{Transport: srv.Transport()}
	c, err := llm.NewClient(llm.Endpoint{BaseURL: "http://simulated.test/v1"}, opt, nil, meter)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// runAll sends reqs from callers goroutines taking the next request as
// they finish one, and returns the first error.
func runAll(ctx context.Context, c *llm.Client, reqs []llm.Request, callers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
				if _, err := c.Chat(ctx, reqs[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return errors.Join(<-errs)
}

// TestSporadic429sKeepTheLimit: 4% of attempts answered 429 (Retry-After
// 1s) cost the requests that got them, not the run: the in-flight limit
// stays at its maximum and the run takes about the fault-free time plus
// one Retry-After, where pausing every request for each 429 would take a
// minute.
func TestSporadic429sKeepTheLimit(t *testing.T) {
	t.Logf("simulated endpoint seed %d", simSeed)
	reqs := rollouts(t, 1000)
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Latency: 50 * time.Millisecond, Seed: simSeed,
			Faults: sim.Faults{RateLimited: 0.04, RetryAfter: time.Second}})
		meter := llm.NewMeter(nil, llm.Budget{})
		c := simClient(t, srv, llm.Options{MaxInFlight: 64, MaxAttempts: 10}, meter)
		start := time.Now()
		if err := runAll(t.Context(), c, reqs, 64); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		n429 := meter.Snapshot().Total.ErrorsByReason["429"]
		h := c.Health()
		t.Logf("%d requests, %d 429s, %v of fake time; %s", len(reqs), n429, elapsed, h)
		if n429 < 20 {
			t.Fatalf("only %d 429s: the test did not exercise them", n429)
		}
		if h.InFlightLimit != 64 || h.LimitLowered != "" {
			t.Errorf("sporadic 429s lowered the in-flight limit to %d (%s)", h.InFlightLimit, h.LimitLowered)
		}
		ideal := time.Duration(len(reqs)) * 50 * time.Millisecond / 64
		if elapsed > 2*ideal+2*time.Second {
			t.Errorf("took %v of fake time; fault-free takes about %v, and a 429 should delay only its own request by 1s", elapsed, ideal)
		}
	})
}

// TestRateLimitedServerIsHeldNearItsLimit: with no limit configured, the
// client learns the server's limit from its x-ratelimit-* headers and
// paces itself: after the server's first minute of allowance is spent,
// it is kept at 90% or more of the limit, with at most 5% of requests
// answered 429.
func TestRateLimitedServerIsHeldNearItsLimit(t *testing.T) {
	t.Logf("simulated endpoint seed %d", simSeed)
	tests := []struct {
		name     string
		rpm, tpm int
		requests int
	}{
		{"requests per minute", 300, 0, 700},
		{"tokens per minute", 0, 50000, 500},
		{"both", 300, 150000, 700},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reqs := rollouts(t, tt.requests)
			synctest.Test(t, func(t *testing.T) {
				srv := sim.New(sim.Config{Latency: 100 * time.Millisecond, Seed: simSeed, LimitRPM: tt.rpm, LimitTPM: tt.tpm, KeepLog: true})
				c := simClient(t, srv, llm.Options{MaxInFlight: 64, MaxAttempts: 20}, nil)
				if err := runAll(t.Context(), c, reqs, 64); err != nil {
					t.Fatal(err)
				}
				checkHeldNearLimit(t, srv.Log(), tt.rpm, tt.tpm)
				h := c.Health()
				t.Logf("%s", h)
				if (tt.rpm > 0) != (h.Requests != nil) || (tt.tpm > 0) != (h.Tokens != nil) {
					t.Errorf("learned limits %+v %+v, want the server's", h.Requests, h.Tokens)
				}
			})
		})
	}
}

// checkHeldNearLimit checks the server's log: few 429s overall, and over
// the last minute of the run (long after the first minute's allowance is
// spent) at least 90% of the limit that binds.
func checkHeldNearLimit(t *testing.T, log []sim.Entry, rpm, tpm int) {
	t.Helper()
	var over int
	for _, e := range log {
		if e.OverLimit {
			over++
		}
	}
	end := log[len(log)-1].Time
	var requests, tokens int
	for _, e := range log {
		if e.Time.After(end.Add(-time.Minute)) && !e.OverLimit {
			requests++
			tokens += e.Tokens
		}
	}
	share := float64(over) / float64(len(log))
	t.Logf("%d attempts, %d over the limit (%.1f%%); last minute: %d requests, %d tokens; run took %v",
		len(log), over, 100*share, requests, tokens, end.Sub(log[0].Time))
	if share > 0.05 {
		t.Errorf("%.1f%% of attempts were over the limit, want <= 5%%", 100*share)
	}
	if end.Sub(log[0].Time) < 75*time.Second {
		t.Fatalf("the run took %v; it must outlast the first minute's allowance to show the pace", end.Sub(log[0].Time))
	}
	reqShare, tokShare := 0.0, 0.0
	if rpm > 0 {
		reqShare = float64(requests) / float64(rpm)
	}
	if tpm > 0 {
		tokShare = float64(tokens) / float64(tpm)
	}
	if got := max(reqShare, tokShare); got < 0.9 || got > 1.02 {
		t.Errorf("last minute used %.0f%% of the requests limit and %.0f%% of the tokens limit; want the binding one at 90-100%%",
			100*reqShare, 100*tokShare)
	}
}

// TestHungAttemptsAreCut: once the stage has learned its latency, an
// attempt the endpoint holds (a hang fault, held 30s) is cut at the
// learned deadline and retried, instead of holding the request until the
// endpoint lets go. One caller, so the run is deterministic.
func TestHungAttemptsAreCut(t *testing.T) {
	t.Logf("simulated endpoint seed %d", simSeed)
	reqs := rollouts(t, 300)
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Latency: 100 * time.Millisecond, Seed: simSeed,
			Faults: sim.Faults{Hang: 0.05, HangMax: 30 * time.Second}})
		meter := llm.NewMeter(nil, llm.Budget{})
		c := simClient(t, srv, llm.Options{AttemptTimeout: 10 * time.Minute, AttemptTimeoutFloor: 200 * time.Millisecond}, meter)
		var retried, slowest time.Duration
		var cutRequests int
		for i, req := range reqs {
			start := time.Now()
			resp, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if i < 30 || resp.Attempts == 1 {
				continue // before the deadline is learned, a hang is held for 30s
			}
			cutRequests++
			slowest = max(slowest, took)
			retried += took
		}
		d := c.Health().Deadlines["rollout"]
		t.Logf("learned deadline %v; %d requests retried after a hang, the slowest took %v", d, cutRequests, slowest)
		if d < 200*time.Millisecond || d > 450*time.Millisecond {
			t.Errorf("learned deadline %v, want 3 x the 99th percentile of 50-150ms latencies", d)
		}
		if cutRequests < 5 {
			t.Fatalf("only %d requests met a hang: the test did not exercise them", cutRequests)
		}
		if slowest > 10*time.Second {
			t.Errorf("a request that met a hang took %v; it should have been cut at %v and retried", slowest, d)
		}
		if n := meter.Snapshot().Total.ErrorsByReason["timeout"]; n < int64(cutRequests) {
			t.Errorf("%d timeouts counted for %d cut requests", n, cutRequests)
		}
	})
}

// TestTokensPerMinuteChargesUsage: a configured tokens-per-minute limit
// charges what each reply used (decoded from the raw body), so a run
// whose replies add up to more than a minute's allowance is slowed to the
// limit. The endpoint answers at once, so the fake time that passes is the
// limiter's doing alone.
func TestTokensPerMinuteChargesUsage(t *testing.T) {
	const tpm = 6000 // 100 tokens/s; a minute's allowance up front
	reqs := rollouts(t, 200)
	synctest.Test(t, func(t *testing.T) {
		srv := sim.New(sim.Config{Seed: simSeed})
		c := simClient(t, srv, llm.Options{TokensPerMinute: tpm}, nil)
		start := time.Now()
		var used, prior int64 // tokens used by every request so far, and by all but the last
		for i, req := range reqs {
			req.MaxTokens = 300
			if prior > tpm+500 {
				// The last request could go only once the bucket had
				// refilled, at 100 tokens a second, what the ones before it
				// used beyond the first minute's allowance.
				want := time.Duration(float64(prior-tpm) / tpm * float64(time.Minute))
				if got := time.Since(start); got < want {
					t.Fatalf("request %d done after %v of fake time, %d tokens used before it; a %d tokens/min limit allows that at %v at the earliest",
						i-1, got, prior, tpm, want)
				}
				t.Logf("%d requests, %d tokens, %v of fake time", i, used, time.Since(start))
				return
			}
			resp, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			prior, used = used, used+resp.PromptTokens+resp.CompletionTokens
		}
		t.Fatalf("%d requests used only %d tokens", len(reqs), used)
	})
}

func ExampleClient_Health() {
	srv := sim.New(sim.Config{LimitRPM: 600})
	c, err := llm.NewClient(llm.Endpoint{BaseURL: "http://simulated.test/v1"},
		llm.Options{MaxInFlight: 8, HTTPClient: &http.Client{Transport: srv.Transport()}}, nil, nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ps, _ := prompts.Load("")
	msgs, _ := ps.RolloutMessages("What is 2+2?")
	if _, err := c.Chat(context.Background(), llm.Request{Stage: "rollout", Model: "sim", Messages: msgs}); err != nil {
		panic(err)
	}
	h := c.Health()
	fmt.Println(h.InFlightLimit, h.Requests.Limit, h.Requests.Remaining)
	// Output: 8 600 599
}
