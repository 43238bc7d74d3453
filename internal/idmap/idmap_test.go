package idmap

import "testing"

// TestMap: hex ids and other ids are kept apart and found again; an id that
// only looks hex (upper case, short, long) keeps its text.
func TestMap(t *testing.T) {
	m := New[int]()
	ids := []string{"0123456789abcdef", "0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "problem-7", "", "ffffffffffffffff"}
	for i, id := range ids {
		m.Set(id, i)
	}
	m.Set("0123456789abcdef", 100) // replaced
	if m.Len() != len(ids) || len(m.hex) != 2 {
		t.Fatalf("Len %d (hex %d), want %d (2)", m.Len(), len(m.hex), len(ids))
	}
	for i, id := range ids {
		want := i
		if i == 0 {
			want = 100
		}
		if v, ok := m.Get(id); !ok || v != want || !m.Has(id) {
			t.Errorf("%q: %d %v, want %d", id, v, ok, want)
		}
	}
	if m.Has("1123456789abcdef") || m.Has("other") {
		t.Error("found an id never set")
	}
}
