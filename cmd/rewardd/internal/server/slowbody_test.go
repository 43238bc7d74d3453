package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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

// slowSender opens a loopback connection to addr that declares a body of
// declared bytes and sends one byte every tick, at most maxBytes of them,
// until ctx ends (a client on a bad link, or one that means harm).
func slowSender(ctx context.Context, t *testing.T, addr string, declared int64, tick time.Duration, maxBytes int) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /v1/score HTTP/1.1\r\nHost: rewardd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", declared); err != nil {
		t.Error(err)
		return
	}
	for range maxBytes {
		select {
		case <-ctx.Done():
			return
		case <-time.After(tick):
		}
		if _, err := conn.Write([]byte(" ")); err != nil {
			return
		}
	}
	<-ctx.Done()
}

// TestSlowBodiesDoNotStarveOthers: connections that declare the largest
// body allowed and send a byte at a time hold only the bytes they sent, so
// a request that sends its body at once is scored while they dribble,
// instead of waiting for room behind them and getting 503.
func TestSlowBodiesDoNotStarveOthers(t *testing.T) {
	const (
		maxBody  = 1 << 20
		budget   = 4 * maxBody
		slow     = 8 // they declare twice the budget
		queueMax = 2 * time.Second
	)
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, func(c *Config, _ *sim.Config) {
		c.MaxBodyBytes, c.MaxInflightBytes, c.QueueWait = maxBody, budget, queueMax
	})
	srv := httptest.NewServer(h.srv) // loopback
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for range slow {
		wg.Go(func() { slowSender(ctx, t, addr, maxBody, 20*time.Millisecond, 200) })
	}
	// Every slow sender's request is in the handler, reading its body.
	deadline := time.Now().Add(10 * time.Second)
	for h.srv.m.bodiesReading.Load() < slow {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slow senders are being read after 10s", h.srv.m.bodiesReading.Load(), slow)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if held := budget - h.srv.bodies.available(); held > budget/4 {
		t.Errorf("%d slow senders that sent a few bytes each hold %d bytes of the %d budget", slow, held, budget)
	}
	_, m := h.do(http.MethodGet, "/metrics", "")
	if !strings.Contains(string(m), fmt.Sprintf("rewardd_request_bodies_reading %d\n", slow)) {
		t.Errorf("/metrics does not count the %d bodies being read", slow)
	}
	body := mustJSON(t, map[string]any{"items": []map[string]any{{"problem_id": "sum-2-3", "response": rewardtest.MarkedResponse}}})
	resp, err := http.Post(srv.URL+"/v1/score", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"judge_ok":true`) {
		t.Errorf("a whole body sent while %d slow ones dribble: %d %.300s; want it scored", slow, resp.StatusCode, out)
	}
}

// TestBodyBuffer reads bodies of known and unknown length: the bytes come
// whole, a body over the limit is refused, and the budget holds the
// buffer's capacity (at most the declared length) until it is freed.
func TestBodyBuffer(t *testing.T) {
	t.Parallel()
	const limit = 300_000
	for _, tc := range []struct {
		name      string
		n         int
		declared  int64 // -1: unknown (chunked)
		wantErr   bool
		maxHolds  int64
		ctxBudget int64
	}{
		{"empty", 0, 0, false, 0, limit},
		{"small, declared", 100, 100, false, 100, limit},
		{"declared, several growths", 250_000, 250_000, false, 250_000, limit},
		{"unknown length", 250_000, -1, false, 2 * 256 << 10, 2 * limit},
		{"unknown length over the limit", limit + 1, -1, true, limit + 1, 2 * limit},
	} {
		budget := newByteBudget(tc.ctxBudget)
		b := bodyBuffer{budget: budget}
		src := io.Reader(strings.NewReader(strings.Repeat("x", tc.n)))
		if tc.declared < 0 {
			src = struct{ io.Reader }{src} // no length to see
		}
		rec := httptest.NewRecorder()
		err := b.readFrom(context.Background(), http.MaxBytesReader(rec, io.NopCloser(src), limit), tc.declared, limit)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.wantErr)
		}
		if !tc.wantErr && len(b.buf) != tc.n {
			t.Errorf("%s: read %d bytes, want %d", tc.name, len(b.buf), tc.n)
		}
		if held := tc.ctxBudget - budget.available(); held != b.reserved || held > tc.maxHolds || int64(cap(b.buf)) > held && held > 0 {
			t.Errorf("%s: the budget holds %d (reserved %d, capacity %d), want the capacity, at most %d", tc.name, held, b.reserved, cap(b.buf), tc.maxHolds)
		}
		b.free()
		if budget.available() != tc.ctxBudget {
			t.Errorf("%s: %d of %d free after free", tc.name, budget.available(), tc.ctxBudget)
		}
	}
	// No room within the wait: errNoRoom.
	b := bodyBuffer{budget: newByteBudget(10)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := b.readFrom(ctx, strings.NewReader("0123456789abc"), 13, limit); !errors.Is(err, errNoRoom) {
		t.Errorf("a body larger than the budget: %v, want errNoRoom", err)
	}
}
