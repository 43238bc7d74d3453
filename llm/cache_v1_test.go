package llm

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeV1 writes a format-1 log, as rubricforge wrote before identities,
// with value[i] under key[i].
func writeV1(t testing.TB, path string, keys []string, values [][]byte) {
	t.Helper()
	b := []byte(cacheMagicV1)
	for i, k := range keys {
		payload := binary.LittleEndian.AppendUint16(nil, uint16(len(k)))
		payload = append(append(payload, k...), values[i]...)
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
		b = append(b, payload...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCacheFormat1IsConverted: a cache written by the previous format is
// converted on open and keeps every answer; a request is answered by the
// old entry with its key, which it then owns.
func TestCacheFormat1IsConverted(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	path := filepath.Join(t.TempDir(), "cache.db")
	reqs := baseRequests(3)
	old := completionBody(1, 2, Choice{Content: "an answer paid for long ago", FinishReason: "stop"})
	writeV1(t, path, []string{CacheKey(reqs[0]), CacheKey(reqs[1]), "not-a-cache-key", CacheKey(reqs[1])},
		[][]byte{old, []byte("replaced"), []byte("skipped"), old})

	var logs logBuffer
	cache := openCache(t, path, &logs)
	if st := cache.Stats(); !st.Converted || st.Entries != 2 {
		t.Errorf("stats %+v; want 2 converted entries", st)
	}
	if !strings.Contains(logs.String(), "converted the response cache") {
		t.Errorf("the conversion is not logged: %s", logs.String())
	}
	if b, _ := os.ReadFile(path); !bytes.HasPrefix(b, []byte(cacheMagic)) {
		t.Errorf("the file was not rewritten in the current format: %q", b[:30])
	}
	c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
	for _, req := range reqs[:2] {
		resp, err := c.Chat(t.Context(), req)
		if err != nil || !resp.Cached || resp.Choices[0].Content != "an answer paid for long ago" {
			t.Errorf("%+v %v; want the old answer", resp, err)
		}
	}
	if _, err := c.Chat(t.Context(), reqs[2]); err != nil || srv.hits.Load() != 1 {
		t.Errorf("a new request: %v, %d sent", err, srv.hits.Load())
	}
	// The old entry belongs to the request that claimed it: another
	// identity with its key (a collision) misses.
	if _, ok, _ := cache.Get(collidingID(IdentityOf(reqs[0]), "other")); ok {
		t.Error("a claimed format-1 entry answered another identity")
	}
	if _, complete := cache.Spent(); complete {
		t.Error("the spend of a converted cache claims to be complete")
	}
	cache.Close()

	cache = openCache(t, path, nil)
	defer cache.Close()
	if st := cache.Stats(); !st.Converted || st.Entries != 3 {
		t.Errorf("after reopen: %+v", st)
	}
	if _, ok, _ := cache.Get(IdentityOf(reqs[0])); !ok {
		t.Error("the claimed answer is gone")
	}
}

// TestCacheFormat1AsBase: a format-1 cache can be a base; it is read, not
// converted.
func TestCacheFormat1AsBase(t *testing.T) {
	dir := t.TempDir()
	basePath := filepath.Join(dir, "old.db")
	req := simpleRequest("q")
	writeV1(t, basePath, []string{CacheKey(req)}, [][]byte{okBody(1)})
	before, _ := os.ReadFile(basePath)
	c := openCache(t, filepath.Join(dir, "cache.db"), nil, CacheBase(basePath))
	defer c.Close()
	if v, ok, err := c.Get(IdentityOf(req)); !ok || err != nil || !bytes.Equal(v, okBody(1)) {
		t.Errorf("%q %v %v", v, ok, err)
	}
	if after, _ := os.ReadFile(basePath); !bytes.Equal(before, after) {
		t.Error("the format-1 base was changed")
	}
}
