package cache

import (
	"crypto/sha256"
	"path/filepath"
	"testing"
)

// collidingID has id's key and another request's digest: what a 64-bit
// collision looks like to the cache.
func collidingID(id Identity, other string) Identity {
	return Identity{Key: id.Key, Digest: sha256.Sum256([]byte(other))}
}

// TestCacheCollisionKeepsBoth: two identities with one key each get their
// own answer, before and after a reopen, with and without the saved index,
// and a tombstone for one leaves the other.
func TestCacheCollisionKeepsBoth(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	a := testID("a")
	b, c3 := collidingID(a, "b"), collidingID(a, "c")
	cache := openCache(t, path, nil)
	for _, p := range []struct {
		id Identity
		v  string
	}{{a, "answer a"}, {b, "answer b"}, {a, "answer a2"}} {
		if err := cache.Put(p.id, []byte(p.v), Usage{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, cache *Cache) {
		t.Helper()
		for _, w := range []struct {
			id   Identity
			want string
		}{{a, "answer a2"}, {b, "answer b"}, {c3, ""}} {
			v, ok, err := cache.Get(w.id)
			if err != nil || string(v) != w.want || ok != (w.want != "") {
				t.Errorf("%s: got %q %v %v, want %q", when, v, ok, err, w.want)
			}
		}
		if n, _ := cache.Len(); n != 2 {
			t.Errorf("%s: %d entries, want 2", when, n)
		}
	}
	check("open", cache)
	cache.Close()
	cache = openCache(t, path, nil)
	if !cache.Stats().IndexLoaded {
		t.Error("the saved index was not used")
	}
	check("reopened with the index", cache)
	cache.close(false)
	cache = openCache(t, path, nil, WithFS(noIndexFS()))
	check("reopened reading the log", cache)

	if err := cache.Invalidate(b); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := cache.Get(b); ok {
		t.Error("an invalidated identity answered")
	}
	if v, ok, _ := cache.Get(a); !ok || string(v) != "answer a2" {
		t.Errorf("the colliding identity lost its answer: %q %v", v, ok)
	}
	cache.Close()
}
