package llm

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get("0123456789abcdef"); ok || err != nil {
		t.Fatalf("empty cache: ok %v err %v", ok, err)
	}
	raw := []byte(`{"choices":[]}`)
	if err := c.Put("0123456789abcdef", raw); err != nil {
		t.Fatal(err)
	}
	if err := c.Put("fedcba9876543210", []byte("x")); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get("0123456789abcdef")
	if err != nil || !ok || !bytes.Equal(got, raw) {
		t.Fatalf("get: %q %v %v", got, ok, err)
	}

	// A second open of a held file fails with a clear message.
	if _, err := OpenCache(path); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("second open: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c, err = OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, err := c.Len(); n != 2 || err != nil {
		t.Errorf("len after reopen %d %v, want 2", n, err)
	}
	got, ok, _ = c.Get("0123456789abcdef")
	if !ok || !bytes.Equal(got, raw) {
		t.Errorf("value lost on reopen: %q", got)
	}
}

// TestDamagedEntryIsAMiss: an entry that no longer decodes is asked
// again and replaced.
func TestDamagedEntryIsAMiss(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	cache := openTestCache(t)
	req := simpleRequest("q")
	if err := cache.Put(CacheKey(req), []byte(`{"choices":[{"ind`)); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
	for i := range 2 {
		resp, err := c.Chat(t.Context(), req)
		if err != nil || resp.Cached != (i == 1) {
			t.Fatalf("call %d: %v %+v", i, err, resp)
		}
	}
	if srv.hits.Load() != 1 {
		t.Errorf("hits %d, want 1", srv.hits.Load())
	}
}
