// Package bufpool reuses the byte buffers of llm's request path (response
// bodies read by the client, entries framed by the response cache) through
// size-classed pools, so that at thousands of answers a second they are not
// garbage for the collector.
package bufpool

import (
	"math/bits"
	"sync"
)

// Byte buffers of the request path (response bodies, cache entries) are
// reused from one request to the next through size-classed pools: at
// thousands of answers a second, allocating them fresh was a tenth of the
// bytes the garbage collector had to reclaim. A buffer goes back only once
// nothing refers to it any more; one larger than the largest class is left
// to the collector.
const (
	minPooledShift = 10 // 1 KiB
	maxPooledShift = 20 // 1 MiB
)

// Pool is a set of size-classed pools; the zero Pool is ready.
type Pool struct {
	classes [maxPooledShift - minPooledShift + 1]sync.Pool
}

// poolClass is the index of the smallest class holding n bytes, and false
// when n is beyond the largest.
func poolClass(n int) (int, bool) {
	shift := max(minPooledShift, bits.Len(uint(max(n, 1)-1)))
	return shift - minPooledShift, shift <= maxPooledShift
}

// Get returns an empty buffer with room for n bytes.
func (bp *Pool) Get(n int) []byte {
	class, ok := poolClass(n)
	if !ok {
		return make([]byte, 0, n)
	}
	if p, _ := bp.classes[class].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<(class+minPooledShift))
}

// Put hands b back for reuse. Its caller must hold the only reference.
func (bp *Pool) Put(b []byte) {
	c := cap(b)
	class, ok := poolClass(c)
	if !ok || c != 1<<(class+minPooledShift) {
		return // not one of the pool's sizes
	}
	b = b[:0]
	bp.classes[class].Put(&b)
}
