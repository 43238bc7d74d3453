package llm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// batchSession is one session of a run in batch mode against the simulated
// endpoint at url: a Batcher over opts and a client deferring to it.
func batchSession(t *testing.T, url string, opts BatchOptions, cache *cache.Cache) (*Batcher, *Client, *BatchAPI) {
	t.Helper()
	api, err := NewBatchAPI(Endpoint{BaseURL: url}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatcher(opts, cache, NewMeter(nil, Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Endpoint{BaseURL: url}, Options{Defer: b.Deferrer(api)}, cache, NewMeter(nil, Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	b.Start(context.Background())
	return b, c, api
}

// rolloutRequest is a rollout the simulator recognizes.
func rolloutRequest() Request {
	return Request{Stage: "rollout", Model: "simulated", Messages: []Message{{Role: "user",
		Content: "Solve step by step, each step as ### Step N:, final answer in <answer></answer>.\n<problem>What is 2+2?</problem>"}}}
}

// unansweredSession asks req in a session whose one batch ends without
// answering it (expired, or cancelled by end when it is not nil) and
// returns what the first ask of the session got.
func unansweredSession(t *testing.T, url string, opts BatchOptions, cache *cache.Cache, req Request, end func(*BatchAPI, string)) error {
	t.Helper()
	b, c, api := batchSession(t, url, opts, cache)
	defer b.Close()
	_, asked := c.Chat(context.Background(), req)
	if ClassOf(asked) != ClassDeferred {
		return asked
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if end != nil {
		st := b.States()
		end(api, st[len(st)-1].BatchID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for b.Waiting() > 0 && ctx.Err() == nil {
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return asked
}

// TestBatchCancelledRowsDoNotCountAsFailures: a batch the user cancelled
// (distill batches cancel, or the provider's console) did not fail its
// rows; however often it happens, the next run asks them again.
func TestBatchCancelledRowsDoNotCountAsFailures(t *testing.T) {
	_, url, stop, err := sim.Start(sim.Config{BatchTurnaround: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cache := openTestCache(t)
	opts := BatchOptions{Dir: t.TempDir(), PollInterval: 10 * time.Millisecond, MaxRowAttempts: 3}
	cancel := func(api *BatchAPI, id string) {
		if _, err := api.CancelBatch(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	for session := 1; session <= 5; session++ {
		if err := unansweredSession(t, url, opts, cache, rolloutRequest(), cancel); ClassOf(err) != ClassDeferred {
			t.Fatalf("session %d, after %d cancelled batches: %v; want the request in a new batch", session, session-1, err)
		}
	}
}

// TestBatchRetryFailedResetsRowFailures: a row that failed in
// MaxRowAttempts expired batches fails at once in later sessions, until a
// session with ResetRowFailures (--retry-failed), which asks it again,
// says so, and whose reset holds for the sessions after it.
func TestBatchRetryFailedResetsRowFailures(t *testing.T) {
	_, url, stop, err := sim.Start(sim.Config{BatchTurnaround: 20 * time.Millisecond, BatchExpire: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cache := openTestCache(t)
	opts := BatchOptions{Dir: t.TempDir(), PollInterval: 10 * time.Millisecond, MaxRowAttempts: 3}
	req := rolloutRequest()
	for session := 1; session <= 3; session++ {
		if err := unansweredSession(t, url, opts, cache, req, nil); ClassOf(err) != ClassDeferred {
			t.Fatalf("session %d: %v, want deferred", session, err)
		}
	}
	if err := unansweredSession(t, url, opts, cache, req, nil); ClassOf(err) != ClassRetryable {
		t.Fatalf("after 3 expired batches: %v, want the row's failure", err)
	}

	var log logBuffer
	reset := opts
	reset.ResetRowFailures, reset.Logger = true, log.logger()
	if err := unansweredSession(t, url, reset, cache, req, nil); ClassOf(err) != ClassDeferred {
		t.Fatalf("with ResetRowFailures: %v, want the request in a new batch", err)
	}
	if !strings.Contains(log.String(), "asked again") {
		t.Errorf("the reset is not in the log:\n%s", log.String())
	}
	if _, hit, _ := cache.Get(IdentityOf(req)); !hit {
		t.Errorf("the batch after the reset did not answer the request")
	}
}
