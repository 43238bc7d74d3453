package cache

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestCacheSavedIndex: after Close the next open reads the saved index and
// no log; after a kill (no Close) it reads only the log written since the
// index was saved; an index that does not describe the log is ignored.
func TestCacheSavedIndex(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil)
	putN(t, c, 0, 100)
	c.Close()

	c = openCache(t, path, nil)
	st := c.Stats()
	if !st.IndexLoaded || st.ScannedBytes != 0 || st.Entries != 100 || st.Records != 100 {
		t.Fatalf("after Close: %+v; want the index loaded and no log read", st)
	}
	before := st.LogBytes
	putN(t, c, 100, 110)
	after := c.Stats().LogBytes
	c.close(false) // killed: the index still covers 100 entries

	c = openCache(t, path, nil)
	st = c.Stats()
	if !st.IndexLoaded || st.ScannedBytes != after-before || st.Entries != 110 {
		t.Fatalf("after a kill: %+v; want %d bytes read after the index", st, after-before)
	}
	wantValues(t, c, 0, 110)
	c.Close()

	damage := map[string]func(){
		"a damaged index": func() {
			b, _ := os.ReadFile(path + ".idx")
			b[len(b)/2] ^= 1
			os.WriteFile(path+".idx", b, 0o600)
		},
		"a log cut below the index": func() { os.Truncate(path, before) },
		"another log's index": func() {
			other := filepath.Join(t.TempDir(), "other.db")
			o := openCache(t, other, nil)
			putN(t, o, 0, 200)
			o.Close()
			b, _ := os.ReadFile(other + ".idx")
			os.WriteFile(path+".idx", b, 0o600)
		},
	}
	for _, name := range []string{"a damaged index", "another log's index", "a log cut below the index"} {
		damage[name]()
		c = openCache(t, path, nil)
		st = c.Stats()
		want := 110
		if name == "a log cut below the index" {
			want = 100
		}
		if st.IndexLoaded || st.Entries != want {
			t.Errorf("%s: %+v; want the index ignored and %d entries", name, st, want)
		}
		wantValues(t, c, 0, want)
		c.Close()
	}
}

// buildLog writes a log of n entries with values of size bytes straight to
// path, as many sessions of puts would leave it, without the saved index.
func buildLog(t testing.TB, path string, n, size int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := logHeader{nonce: newNonce()}.encode()
	value := make([]byte, size)
	for i := range n {
		r := record{kind: kindResponse, key: uint64(i) * 0x9E3779B97F4A7C15, usage: Usage{Stage: "rollout", Model: "m", PromptTokens: 100, CompletionTokens: 200}, value: value}
		r.digest[0], r.digest[1], r.digest[2] = byte(i), byte(i>>8), byte(i>>16)
		buf, _ = appendEntry(buf, &r)
		if len(buf) > 4<<20 || i == n-1 {
			if _, err := f.Write(buf); err != nil {
				t.Fatal(err)
			}
			buf = buf[:0]
		}
	}
}

// BenchmarkCacheOpen1M opens a log of 1M entries: reading the whole log
// (the first open after a conversion, or when the index is lost) and from
// the index saved at Close. It reports the Go heap the open cache holds
// per entry. Values are 200 bytes (the log is ~300 MB); reading the log
// scales with its bytes, loading the index does not.
func BenchmarkCacheOpen1M(b *testing.B) {
	const n = 1_000_000
	path := filepath.Join(b.TempDir(), "cache.db")
	buildLog(b, path, n, 200)
	for _, mode := range []string{"log", "index"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				if mode == "log" {
					os.Remove(path + ".idx")
				}
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				start := time.Now()
				c, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				open := time.Since(start)
				runtime.GC()
				runtime.ReadMemStats(&m1)
				if got, _ := c.Len(); got != n {
					b.Fatalf("%d entries", got)
				}
				b.ReportMetric(open.Seconds(), "s/open")
				b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "heap-bytes/entry")
				c.Close()
			}
		})
	}
}
