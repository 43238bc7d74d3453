package slab

import "testing"

func TestSlab(t *testing.T) {
	var s Slab[int]
	if a := s.Take(0); a == nil {
		t.Fatal("an empty take is nil")
	}
	a := s.Take(3)
	a[0] = 7
	b := s.Take(2)
	if len(a) != 3 || cap(a) != 3 || len(b) != 2 || a[0] != 7 {
		t.Fatalf("takes %v %v", a, b)
	}
	s.Reset()
	if c := s.Take(3); c[0] != 0 {
		t.Fatalf("a take after reset is not zeroed: %v", c)
	}
}
