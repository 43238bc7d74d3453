package llm

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// baseRequests are the requests a base run answered.
func baseRequests(n int) []Request {
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = simpleRequest("q" + strconv.Itoa(i))
	}
	return reqs
}

func chatAll(t testing.TB, c *Client, reqs []Request) {
	t.Helper()
	for _, req := range reqs {
		if _, err := c.Chat(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBaseCacheSharedAndNeverWritten: two variants read one base at once;
// the base's answers are copied into each variant's own cache, the base
// file is never changed, and once the base is deleted each variant's
// resume still sends nothing.
func TestBaseCacheSharedAndNeverWritten(t *testing.T) {
	dir := t.TempDir()
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, 200, okBody(1)) })
	reqs := baseRequests(20)
	basePath := filepath.Join(dir, "base.db")
	base := openCache(t, basePath, nil)
	chatAll(t, newTestClient(t, srv.endpoint(), fastOptions(), base, nil), reqs)
	base.Close()
	baseBytes, _ := os.ReadFile(basePath)
	baseIdx, _ := os.ReadFile(basePath + ".idx")
	sent := srv.hits.Load()

	// The base's run cannot write it while variants read it.
	variants := []string{filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")}
	caches := make([]*cache.Cache, len(variants))
	for i, p := range variants {
		caches[i] = openCache(t, p, nil, cache.WithBase(basePath))
	}
	if _, err := cache.Open(basePath); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("opening the base for writing while variants read it: %v", err)
	}
	var wg sync.WaitGroup
	for i, c := range caches {
		meter := NewMeter(map[string]Price{"m": {PromptPerMTok: 1}}, Budget{})
		client := newTestClient(t, srv.endpoint(), fastOptions(), c, meter)
		wg.Go(func() {
			chatAll(t, client, reqs)
			if s := meter.Snapshot().Total; s.CacheHits != int64(len(reqs)) || s.CostUSD != 0 {
				t.Errorf("variant %d: %+v", i, s)
			}
		})
	}
	wg.Wait()
	for _, c := range caches {
		if n, _ := c.Len(); n != len(reqs) {
			t.Errorf("%d answers copied into the variant, want %d", n, len(reqs))
		}
		if spent, _ := c.Spent(); len(spent) != 0 {
			t.Errorf("copied answers counted as spend: %+v", spent)
		}
		c.Close()
	}
	if srv.hits.Load() != sent {
		t.Errorf("the variants sent %d requests", srv.hits.Load()-sent)
	}
	if b, _ := os.ReadFile(basePath); !bytes.Equal(b, baseBytes) {
		t.Error("the base cache was written")
	}
	if b, _ := os.ReadFile(basePath + ".idx"); !bytes.Equal(b, baseIdx) {
		t.Error("the base cache's index was written")
	}

	os.Remove(basePath)
	os.Remove(basePath + ".idx")
	for _, p := range variants {
		var logs logBuffer
		c := openCache(t, p, &logs, cache.WithBase(basePath))
		chatAll(t, newTestClient(t, srv.endpoint(), fastOptions(), c, nil), reqs)
		c.Close()
		if !strings.Contains(logs.String(), "base response cache does not exist") {
			t.Errorf("no warning about the missing base: %s", logs.String())
		}
	}
	if srv.hits.Load() != sent {
		t.Errorf("resumes after deleting the base sent %d requests", srv.hits.Load()-sent)
	}
}
