package llm

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestControllerLimit(t *testing.T) {
	c := newController(8, 0, 0)
	var epochs []uint64
	for range 8 {
		e, err := c.acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, e)
	}
	// The ninth waits, and gives up with its context.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ninth acquire: %v", err)
	}

	// A wave of 429s halves the limit once.
	for _, e := range epochs {
		c.throttled(e)
	}
	if l := c.currentLimit(); l != 4 {
		t.Fatalf("limit after one wave of 429s = %d, want 4", l)
	}
	for range 8 {
		c.release()
	}

	// A 429 on an attempt sent under the new limit halves it again.
	e, _ := c.acquire(t.Context())
	if l, changed := c.throttled(e); !changed || l != 2 {
		t.Errorf("second decrease: %d %v", l, changed)
	}
	c.release()
	for range 10 {
		e, _ := c.acquire(t.Context())
		c.throttled(e)
		c.release()
	}
	if l := c.currentLimit(); l != 1 {
		t.Errorf("limit floor %d, want 1", l)
	}

	// Additive recovery: +1 after a window of `limit` successes.
	for want := 2; want <= 8; want++ {
		for range want - 1 {
			c.succeeded()
		}
		if l := c.currentLimit(); l != want {
			t.Fatalf("limit %d, want %d", l, want)
		}
	}
	for range 100 {
		c.succeeded()
	}
	if l := c.currentLimit(); l != 8 {
		t.Errorf("limit grew past max: %d", l)
	}
}

func TestControllerWaitersAreServedInOrder(t *testing.T) {
	c := newController(1, 0, 0)
	if _, err := c.acquire(t.Context()); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if _, err := c.acquire(t.Context()); err == nil {
				order <- i
				c.release()
			}
		}()
		for {
			c.mu.Lock()
			n := len(c.waiters)
			c.mu.Unlock()
			if n == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	c.release()
	for want := range 3 {
		if got := <-order; got != want {
			t.Errorf("waiter %d served in place %d", got, want)
		}
	}
}

// TestTokenLimiterRefund pins the x/time/rate behaviour settle relies on:
// ReserveN with a negative count puts tokens back.
func TestTokenLimiterRefund(t *testing.T) {
	c := newController(4, 0, 6000) // 100 tokens/s, burst 6000
	n, err := c.waitRate(t.Context(), 6000)
	if err != nil || n != 6000 {
		t.Fatalf("reserve: %d %v", n, err)
	}
	if tok := c.tpm.Tokens(); tok > 50 {
		t.Fatalf("after reserving the burst, %v tokens left", tok)
	}
	c.settle(n, 1000)
	if tok := c.tpm.Tokens(); tok < 4900 || tok > 5100 {
		t.Errorf("after settling 6000 reserved against 1000 used: %v tokens, want ~5000", tok)
	}
	n, _ = c.waitRate(t.Context(), 1000)
	c.settle(n, 3000)
	if tok := c.tpm.Tokens(); tok > 2100 {
		t.Errorf("after using 2000 more than reserved: %v tokens, want ~2000", tok)
	}
	// Oversized estimates are capped at the burst instead of failing.
	c2 := newController(1, 0, 60)
	if n, err := c2.waitRate(t.Context(), 1e6); err != nil || n != 60 {
		t.Errorf("oversized estimate: %d %v", n, err)
	}
}

func TestPauseRespectsContext(t *testing.T) {
	c := newController(1, 0, 0)
	c.pause(time.Now().Add(time.Hour))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("paused acquire: %v", err)
	}
}
