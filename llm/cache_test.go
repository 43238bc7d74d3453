package llm

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// TestCacheTornTail: a crash mid-write leaves a partial entry at the end of
// the log; reopening keeps every whole entry and cuts the rest off.
func TestCacheTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := c.Put(fmt.Sprintf("key-%d", i), bytes.Repeat([]byte{byte(i)}, 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	st, _ := os.Stat(path)
	whole := st.Size()
	for _, tail := range [][]byte{
		{0x01, 0x02, 0x03},                       // a torn header
		{0, 0, 0, 0, 50, 0, 0, 0, 1, 2, 3, 4, 5}, // a header promising more than is there
		append([]byte{0xde, 0xad, 0xbe, 0xef, 6, 0, 0, 0}, []byte{1, 0, 'k', 'v', 'v', 'v'}...), // a bad checksum
	} {
		f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		f.Write(tail)
		f.Close()
		c, err := OpenCache(path)
		if err != nil {
			t.Fatalf("reopen after a torn tail: %v", err)
		}
		if n, _ := c.Len(); n != 10 {
			t.Errorf("%d entries after reopen, want 10", n)
		}
		if v, ok, _ := c.Get("key-7"); !ok || len(v) != 107 || v[0] != 7 {
			t.Errorf("key-7 after reopen: %v %v", ok, len(v))
		}
		if err := c.Put("after", []byte("x")); err != nil {
			t.Fatal(err)
		}
		c.Close()
		st, _ := os.Stat(path)
		if st.Size() <= whole {
			t.Errorf("log did not grow past the cut")
		}
		os.Truncate(path, whole)
	}
}

func TestCacheRejectsForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	os.WriteFile(path, []byte("SQLite format 3\x00 and more"), 0o600)
	if _, err := OpenCache(path); err == nil || !strings.Contains(err.Error(), "not a rubricforge cache log") {
		t.Errorf("foreign file: %v", err)
	}
}

func TestCacheConcurrentPuts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			if err := c.Put(fmt.Sprintf("k%03d", i), []byte(fmt.Sprintf("value %d", i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c.Put("k000", []byte("replaced"))
	c.Close()
	if err := c.Put("late", nil); err == nil {
		t.Error("Put after Close succeeded")
	}
	c, err = OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, _ := c.Len(); n != 400 {
		t.Errorf("len %d, want 400", n)
	}
	for i := 1; i < 400; i += 37 {
		v, ok, _ := c.Get(fmt.Sprintf("k%03d", i))
		if !ok || string(v) != fmt.Sprintf("value %d", i) {
			t.Errorf("k%03d = %q %v", i, v, ok)
		}
	}
	if v, _, _ := c.Get("k000"); string(v) != "replaced" {
		t.Errorf("the latest value must win: %q", v)
	}
}

// BenchmarkCachePut measures durable puts of rollout-sized values from many
// goroutines at once, as a busy run makes them.
func BenchmarkCachePut(b *testing.B) {
	c, err := OpenCache(filepath.Join(b.TempDir(), "cache.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	value := bytes.Repeat([]byte("x"), 1500)
	b.SetParallelism(256)
	var n sync.Mutex
	i := 0
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Lock()
			i++
			k := fmt.Sprintf("%016x", uint64(i)*0x9E3779B97F4A7C15)
			n.Unlock()
			if err := c.Put(k, value); err != nil {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}
