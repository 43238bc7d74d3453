package bufpool

import "testing"

// TestBufPoolSizes: a buffer from the pool always has room for what was
// asked, and only buffers of the pool's own sizes go back into it.
func TestBufPoolSizes(t *testing.T) {
	var bp Pool
	for _, n := range []int{0, 1, 1023, 1024, 1025, 4096, 70_000, 1 << 20, 1<<20 + 1, 5 << 20} {
		b := bp.Get(n)
		if len(b) != 0 || cap(b) < n {
			t.Errorf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		bp.Put(append(b, 'x'))
		if again := bp.Get(n); cap(again) < n || len(again) != 0 {
			t.Errorf("Get(%d) after a put: len %d cap %d", n, len(again), cap(again))
		}
	}
	odd := make([]byte, 0, 3000)
	bp.Put(odd)
	if got := bp.Get(2048); cap(got) == 3000 {
		t.Error("a buffer of no pooled size came back from the pool")
	}
}
