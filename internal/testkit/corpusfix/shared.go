package corpusfix

import (
	"os"
	"sync"
	"testing"
)

// Shared holds the fixtures that several tests of one test binary only
// read, each written once, under a temporary root: under the race
// detector, writing a corpus costs more CPU than most of the checks made
// on it. The zero value is ready; TestMain calls Remove after m.Run.
type Shared struct {
	Prefix string // of the root's name, e.g. "audit-shared-"

	mu   sync.Mutex
	root string
	made map[string]any
}

// Get returns the fixture named key, calling make with a new directory of
// its own the first time (holding the lock, so that parallel tests wait
// for one fixture instead of each making it). Tests must not change it.
func Get[T any](t testing.TB, s *Shared, key string, make func(dir string) T) T {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.made[key]; ok {
		return v.(T)
	}
	if s.root == "" {
		root, err := os.MkdirTemp("", s.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		s.root = root
	}
	dir, err := os.MkdirTemp(s.root, "fixture-")
	if err != nil {
		t.Fatal(err)
	}
	v := make(dir)
	if s.made == nil {
		s.made = map[string]any{}
	}
	s.made[key] = v
	return v
}

// Remove deletes every fixture.
func (s *Shared) Remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root != "" {
		_ = os.RemoveAll(s.root) // a temporary directory; nothing else holds it
	}
}
