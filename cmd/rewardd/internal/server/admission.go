package server

import (
	"context"
	"sync"
)

// byteBudget bounds the bytes of the request bodies held at once: a request
// reserves its body's size before reading it and waits while the others
// hold the room. It is safe for concurrent use.
type byteBudget struct {
	mu   sync.Mutex
	free int64
	wake chan struct{} // closed, and replaced, when bytes are released
	// waitHook, set by tests before requests come, is called when a
	// reservation starts waiting for room.
	waitHook func()
}

func newByteBudget(size int64) *byteBudget {
	return &byteBudget{free: size, wake: make(chan struct{})}
}

// acquire reserves n bytes, waiting until they are free or ctx ends.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if n <= b.free {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		wake := b.wake
		b.mu.Unlock()
		if b.waitHook != nil {
			b.waitHook()
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// available is the number of bytes not reserved.
func (b *byteBudget) available() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free
}

// release gives n reserved bytes back and wakes the waiting requests.
func (b *byteBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}
