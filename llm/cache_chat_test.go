package llm

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys/faultfs"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// TestDamagedEntryIsAMiss: an entry that no longer decodes is asked
// again and replaced.
func TestDamagedEntryIsAMiss(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	responses := openTestCache(t)
	req := simpleRequest("q")
	if err := responses.Put(IdentityOf(req), []byte(`{"choices":[{"ind`), cache.Usage{}); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, srv.endpoint(), fastOptions(), responses, nil)
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

// TestCacheWriteFailureIsFatal: Chat turns a failed write or fsync of the
// cache's log into a fatal error that stops the run, not a warning, naming
// the file; so does every Chat after it, the failure being sticky (see
// llm/cache's TestCacheWriteFailureIsSticky); and what was durable before
// the failure is still there.
func TestCacheWriteFailureIsFatal(t *testing.T) {
	for _, op := range []string{"write", "sync"} {
		t.Run(op, func(t *testing.T) {
			ffs := &faultfs.FS{}
			path := filepath.Join(t.TempDir(), "cache.db")
			responses := openCache(t, path, nil, cache.WithFS(ffs))
			defer responses.Close()
			srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
			c := newTestClient(t, srv.endpoint(), fastOptions(), responses, nil)
			if _, err := c.Chat(t.Context(), simpleRequest("before")); err != nil {
				t.Fatal(err)
			}
			ffs.SetFail(func(o, name string) error {
				if o == op && filepath.Base(name) == "cache.db" {
					return syscall.EIO
				}
				return nil
			})
			for _, q := range []string{"x", "q"} {
				_, err := c.Chat(t.Context(), simpleRequest(q))
				var e *Error
				if !errors.As(err, &e) || e.Class != ClassFatal || e.Reason != "cache_write" || !errors.Is(err, syscall.EIO) {
					t.Fatalf("Chat %s: %v; want a fatal cache_write error", q, err)
				}
				if !strings.Contains(err.Error(), "cache.db") {
					t.Errorf("the error does not name the file: %v", err)
				}
				ffs.SetFail(nil) // the next Chat fails on the sticky failure alone
			}
			if err := responses.Close(); !errors.Is(err, syscall.EIO) {
				t.Errorf("Close: %v; want the write failure", err)
			}
			// What was durable before the failure is still there.
			c2 := openCache(t, path, nil)
			defer c2.Close()
			if _, ok, err := c2.Get(IdentityOf(simpleRequest("before"))); !ok || err != nil {
				t.Errorf("the answer made durable before the failure: %v %v", ok, err)
			}
		})
	}
}

// writeFormat1 writes a response cache in its format 1, as rubricforge
// wrote it before identities, with values[i] under keys[i]. The layout is
// spelled out here, apart from llm/cache's reader: the line
// "rubricforge-cache-log/1\n", then per entry the CRC-32C of its payload,
// the payload's length (both uint32, little-endian) and the payload: the
// key's length (uint16, little-endian), the key, the value.
func writeFormat1(t testing.TB, path string, keys []string, values [][]byte) {
	t.Helper()
	crc := crc32.MakeTable(crc32.Castagnoli)
	b := []byte("rubricforge-cache-log/1\n")
	for i, k := range keys {
		payload := binary.LittleEndian.AppendUint16(nil, uint16(len(k)))
		payload = append(append(payload, k...), values[i]...)
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, crc))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
		b = append(b, payload...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestChatAnswersFromAFormat1Cache: a cache written by the previous format
// answers Chat from its old entries, as cache hits (llm/cache's
// TestCacheFormat1IsConverted checks the conversion itself); a request it
// does not hold is sent.
func TestChatAnswersFromAFormat1Cache(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	path := filepath.Join(t.TempDir(), "cache.db")
	reqs := baseRequests(3)
	old := completionBody(1, 2, Choice{Content: "an answer paid for long ago", FinishReason: "stop"})
	writeFormat1(t, path, []string{CacheKey(reqs[0]), CacheKey(reqs[1]), "not-a-cache-key", CacheKey(reqs[1])},
		[][]byte{old, []byte("replaced"), []byte("skipped"), old})
	responses := openCache(t, path, nil)
	defer responses.Close()
	if st := responses.Stats(); !st.Converted || st.Entries != 2 {
		t.Errorf("stats %+v; want 2 converted entries", st)
	}
	c := newTestClient(t, srv.endpoint(), fastOptions(), responses, nil)
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
	if _, ok, _ := responses.Get(collidingID(IdentityOf(reqs[0]), "other")); ok {
		t.Error("a claimed format-1 entry answered another identity")
	}
}
