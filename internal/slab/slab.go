// Package slab owns one allocation pattern: slices carved from one backing
// array that is reused after Reset, so that a request scored again and again
// (rewardd's /v1/score_group, reward's group scoring) allocates only when it
// needs more room than the last one.
package slab

import "unsafe"

// Slab hands out slices carved from one backing array, which it reuses
// after Reset. The zero Slab is empty and ready.
type Slab[T any] struct{ buf []T }

// Grow makes room for n more elements in one allocation, if there is not.
func (s *Slab[T]) Grow(n int) {
	if s.buf == nil || len(s.buf)+n > cap(s.buf) { // a slice taken is never nil
		s.buf = make([]T, 0, max(n, 2*cap(s.buf)))
	}
}

// Take returns n zero elements, with no room to append in place.
func (s *Slab[T]) Take(n int) []T {
	s.Grow(n)
	i := len(s.buf)
	s.buf = s.buf[:i+n]
	out := s.buf[i : i+n : i+n]
	clear(out)
	return out
}

// Extend appends to the slab with add and returns what add appended (nil
// for nothing), with no room to append in place.
func (s *Slab[T]) Extend(add func([]T) []T) []T {
	i := len(s.buf)
	s.buf = add(s.buf)
	if len(s.buf) == i {
		return nil
	}
	return s.buf[i:len(s.buf):len(s.buf)]
}

// Reset makes the whole backing array free for the next takes; the slices
// handed out before share it and must no longer be used.
func (s *Slab[T]) Reset() { s.buf = s.buf[:0] }

// Bytes is the memory the backing array holds.
func (s *Slab[T]) Bytes() int {
	var zero T
	return cap(s.buf) * int(unsafe.Sizeof(zero))
}
