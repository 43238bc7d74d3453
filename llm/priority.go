package llm

import (
	"container/heap"
	"context"
	"math"
)

type priorityKey struct{}

// WithPriority returns ctx with an order for the requests made under it:
// when attempts wait for an in-flight slot, the one with the smallest order
// goes first, and among equal orders the one that asked first. Requests
// under a context without an order come after every ordered one, in the
// order they asked.
//
// A pipeline gives each problem the order it was admitted in, so the
// problems already under way (their retries and their later stages) are
// finished before new ones take slots: a retry that waited out its
// Retry-After does not queue again behind every request asked since.
func WithPriority(ctx context.Context, order uint64) context.Context {
	return context.WithValue(ctx, priorityKey{}, order)
}

func priorityOf(ctx context.Context) uint64 {
	if o, ok := ctx.Value(priorityKey{}).(uint64); ok {
		return o
	}
	return math.MaxUint64
}

// waitQueue holds the attempts waiting for a slot, smallest (order, seq)
// first. It implements heap.Interface; use push, pop and remove.
type waitQueue struct {
	items []*waiter
	seq   uint64 // arrivals so far
}

func (q *waitQueue) Len() int { return len(q.items) }

func (q *waitQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.order != b.order {
		return a.order < b.order
	}
	return a.seq < b.seq
}

func (q *waitQueue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].pos, q.items[j].pos = i, j
}

func (q *waitQueue) Push(x any) {
	w := x.(*waiter)
	w.pos = len(q.items)
	q.items = append(q.items, w)
}

func (q *waitQueue) Pop() any {
	last := len(q.items) - 1
	w := q.items[last]
	q.items[last] = nil
	q.items = q.items[:last]
	w.pos = -1
	return w
}

func (q *waitQueue) push(w *waiter) {
	q.seq++
	w.seq = q.seq
	heap.Push(q, w)
}

func (q *waitQueue) pop() *waiter { return heap.Pop(q).(*waiter) }

// remove takes w out of the queue if it is still there.
func (q *waitQueue) remove(w *waiter) {
	if w.pos >= 0 && w.pos < len(q.items) && q.items[w.pos] == w {
		heap.Remove(q, w.pos)
	}
}
