package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/rubricforge/rubricforge/llm"
)

// fanOut runs call(ctx, i) for i in [0, n) concurrently and returns the
// first error, cancelling the others once one fails. A request deferred to
// a batch is not a failure: the others go on, so that every request of the
// fan-out joins the same batch, and the deferral is returned when nothing
// failed. A panic in a call
// (they run the answer verifier and the reply parsers) is recovered and
// returned as a *panicError carrying the stack, so it fails one problem
// instead of the process.
func fanOut(ctx context.Context, n int, call func(ctx context.Context, i int) error) error {
	if n == 1 {
		return safeCall(ctx, 0, call)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var once, deferOnce sync.Once
	var first, deferred error
	for i := range n {
		wg.Go(func() {
			err := safeCall(ctx, i, call)
			switch {
			case err == nil:
			case llm.ClassOf(err) == llm.ClassDeferred:
				deferOnce.Do(func() { deferred = err })
			default:
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return deferred
}

// warmFirst runs call(ctx, 0) alone, then call(ctx, i) for i in [1, n)
// at once (fanOut): requests that share a prompt prefix, of which a
// server's prefix cache computes the shared part once only when the first
// has been answered before the others arrive. A first request deferred to
// a batch does not hold the others back (a batch has no prefix to warm).
func warmFirst(ctx context.Context, n int, call func(ctx context.Context, i int) error) error {
	if n <= 1 {
		return fanOut(ctx, n, call)
	}
	first := safeCall(ctx, 0, call)
	if first != nil && llm.ClassOf(first) != llm.ClassDeferred {
		return first
	}
	err := fanOut(ctx, n-1, func(ctx context.Context, i int) error { return call(ctx, i+1) })
	if err == nil {
		return first
	}
	return err
}

func safeCall(ctx context.Context, i int, call func(ctx context.Context, i int) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r)
		}
	}()
	return call(ctx, i)
}

// panicError is a recovered panic with the stack of the goroutine it
// happened in.
type panicError struct {
	value any
	stack []byte
}

func newPanicError(value any) *panicError { return &panicError{value: value, stack: debug.Stack()} }

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }
