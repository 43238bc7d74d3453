package llm

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

// bufPool is a set of size-classed pools; the zero bufPool is ready.
type bufPool struct {
	classes [maxPooledShift - minPooledShift + 1]sync.Pool
}

// poolClass is the index of the smallest class holding n bytes, and false
// when n is beyond the largest.
func poolClass(n int) (int, bool) {
	shift := max(minPooledShift, bits.Len(uint(max(n, 1)-1)))
	return shift - minPooledShift, shift <= maxPooledShift
}

// get returns an empty buffer with room for n bytes.
func (bp *bufPool) get(n int) []byte {
	class, ok := poolClass(n)
	if !ok {
		return make([]byte, 0, n)
	}
	if p, _ := bp.classes[class].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<(class+minPooledShift))
}

// put hands b back for reuse. Its caller must hold the only reference.
func (bp *bufPool) put(b []byte) {
	c := cap(b)
	class, ok := poolClass(c)
	if !ok || c != 1<<(class+minPooledShift) {
		return // not one of the pool's sizes
	}
	b = b[:0]
	bp.classes[class].Put(&b)
}
