package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// holdMarker in a response makes gate hold its judge request.
const holdMarker = "[reward-test:hold]"

// gate holds every judge request whose body holds holdMarker until release.
type gate struct {
	next    http.RoundTripper
	held    chan struct{}
	gone    chan struct{} // a held request whose caller went away before release
	open    chan struct{}
	release func()
}

func newGate() *gate {
	g := &gate{held: make(chan struct{}, 64), gone: make(chan struct{}, 64), open: make(chan struct{})}
	var once sync.Once
	g.release = func() { once.Do(func() { close(g.open) }) }
	return g
}

func (g *gate) wrap(next http.RoundTripper) http.RoundTripper { g.next = next; return g }

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(holdMarker)) {
		g.held <- struct{}{}
		select {
		case <-g.open:
		case <-r.Context().Done():
			g.gone <- struct{}{}
			return nil, r.Context().Err()
		}
	}
	return g.next.RoundTrip(r)
}

// TestEmptyBatch checks what OpenRLHF's multi-URL split sends a server with
// no share of the batch: 200 and empty lists.
func TestEmptyBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()})
	var got getRewardAnswer
	h.post("/get_reward", `{"query": []}`, &got)
	if got.Rewards == nil || len(got.Rewards) != 0 || got.Scores == nil || len(got.Scores) != 0 {
		t.Errorf("rewards %v scores %v, want two empty lists", got.Rewards, got.Scores)
	}
	for _, k := range extraLogKeys {
		if v, ok := got.ExtraLogs[k]; !ok || v == nil || len(v) != 0 {
			t.Errorf("extra_logs[%s] = %v, want an empty list", k, v)
		}
	}
}

// TestFullQueueWaits checks that a request finding every slot taken waits
// for one (bounded by QueueWait) instead of getting 503, which OpenRLHF
// retries only five times, one second apart; and that request bodies are
// admitted by their bytes.
func TestFullQueueWaits(t *testing.T) {
	t.Parallel()
	held := "### Step 1: Add.\n2+3 = 5. " + holdMarker + "\n<answer>5</answer>"
	heldBody := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": held}}})
	body := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}})
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"one request slot", func(c *Config) { c.MaxQueue = 1 }},
		{"bytes for one body", func(c *Config) {
			c.MaxInflightBytes = int64(max(len(heldBody), len(body))) + 10
			c.MaxBodyBytes = c.MaxInflightBytes
		}},
	} {
		g := newGate()
		h := newHarnessVia(t, []schema.Label{rewardtest.DemoLabel()}, g.wrap, func(c *Config, _ *sim.Config) { tc.cfg(c) })
		waiting := make(chan struct{})
		var once sync.Once
		h.srv.waitHook = func() { once.Do(func() { close(waiting) }) }
		h.srv.bodies.waitHook = h.srv.waitHook
		first := make(chan int, 1)
		go func() { code, _ := h.do(http.MethodPost, "/v1/score", heldBody); first <- code }()
		<-g.held
		second := make(chan int, 1)
		go func() { code, _ := h.do(http.MethodPost, "/v1/score", body); second <- code }()
		select {
		case code := <-second:
			t.Errorf("%s: the second request was answered %d while the first held the room; want it to wait", tc.name, code)
			second <- code
		case <-waiting: // it waits for a slot or for room
		}
		g.release()
		if a, b := <-first, <-second; a != http.StatusOK || b != http.StatusOK {
			t.Errorf("%s: %d and %d, want 200 for both", tc.name, a, b)
		}
	}

	// The wait is bounded: past QueueWait the answer is 503 naming the flag.
	g := newGate()
	h := newHarnessVia(t, []schema.Label{rewardtest.DemoLabel()}, g.wrap, func(c *Config, _ *sim.Config) { c.MaxQueue, c.QueueWait = 1, 20*time.Millisecond })
	defer g.release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/score", strings.NewReader(heldBody))
		h.srv.ServeHTTP(httptest.NewRecorder(), req)
	}()
	<-g.held
	code, out := h.do(http.MethodPost, "/v1/score", body)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(out), "--queue-wait") {
		t.Errorf("past the queue wait: %d %s, want 503 naming --queue-wait", code, out)
	}
}
