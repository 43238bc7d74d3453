package cache

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// testID is an identity made from a name, for tests that need no request.
func testID(name string) Identity {
	return Identity{Key: xxhash.Sum64String(name), Digest: sha256.Sum256([]byte(name))}
}

// logBuffer is a concurrency-safe buffer for a debug-level slog logger.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openCache opens the cache at path with a logger into logs (when not nil).
func openCache(t testing.TB, path string, logs *logBuffer, opts ...Option) *Cache {
	t.Helper()
	if logs != nil {
		opts = append(opts, WithLogger(logs.logger()))
	}
	c, err := Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// putN stores values "value i" under testID("key-i"), usage in stage "rollout".
func putN(t testing.TB, c *Cache, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		u := Usage{Stage: "rollout", Model: "m", PromptTokens: int64(10 + i), CompletionTokens: int64(i)}
		if err := c.Put(testID(fmt.Sprintf("key-%d", i)), []byte(fmt.Sprintf("value %d", i)), u); err != nil {
			t.Fatal(err)
		}
	}
}

// wantValues checks that key-i holds "value i" for i in [from, to).
func wantValues(t testing.TB, c *Cache, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		v, ok, err := c.Get(testID(fmt.Sprintf("key-%d", i)))
		if err != nil || !ok || string(v) != fmt.Sprintf("value %d", i) {
			t.Errorf("key-%d: %q %v %v", i, v, ok, err)
		}
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil)
	if _, ok, err := c.Get(testID("a")); ok || err != nil {
		t.Fatalf("empty cache: ok %v err %v", ok, err)
	}
	raw := []byte(`{"choices":[]}`)
	if err := c.Put(testID("a"), raw, Usage{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(testID("b"), []byte("x"), Usage{}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(testID("a"))
	if err != nil || !ok || !bytes.Equal(got, raw) {
		t.Fatalf("get: %q %v %v", got, ok, err)
	}

	// A second open of a held file fails with a clear message.
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("second open: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = openCache(t, path, nil)
	defer c.Close()
	if n, err := c.Len(); n != 2 || err != nil {
		t.Errorf("len after reopen %d %v, want 2", n, err)
	}
	got, ok, _ = c.Get(testID("a"))
	if !ok || !bytes.Equal(got, raw) {
		t.Errorf("value lost on reopen: %q", got)
	}
}

// appendBytes appends b to the file at path.
func appendBytes(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestCacheTornTail: a crash mid-write leaves a partial entry at the end of
// the log; reopening keeps every whole entry and cuts the rest off, quietly.
func TestCacheTornTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil)
	putN(t, c, 0, 10)
	c.Close()
	os.Remove(path + ".idx") // read the whole log, as after a crash
	whole := fileSize(t, path)
	entry, _ := appendEntry(nil, &record{kind: kindResponse, key: 1, value: []byte("a whole entry, then cut")})
	for name, tail := range map[string][]byte{
		"a torn header":                 entry[:7],
		"a header promising more":       entry[:len(entry)-3],
		"a bad checksum":                append(append([]byte{}, entry[:len(entry)-1]...), entry[len(entry)-1]^1),
		"zeros (a file extended early)": make([]byte, 4096),
	} {
		t.Run(name, func(t *testing.T) {
			appendBytes(t, path, tail)
			var logs logBuffer
			c := openCache(t, path, &logs)
			if n, _ := c.Len(); n != 10 {
				t.Errorf("%d entries after reopen, want 10", n)
			}
			wantValues(t, c, 0, 10)
			if st := c.Stats(); st.TornBytes != int64(len(tail)) || st.Damaged != 0 {
				t.Errorf("stats %+v: want %d torn bytes and nothing damaged", st, len(tail))
			}
			if strings.Contains(logs.String(), "WARN") {
				t.Errorf("a torn tail must be cut quietly; logged: %s", logs.String())
			}
			putN(t, c, 10, 11)
			c.close(false)
			c = openCache(t, path, nil)
			wantValues(t, c, 0, 11)
			c.close(false)
			os.Truncate(path, whole)
		})
	}
}

// TestCacheDamagedMiddle: a damaged entry in the middle of the log is
// skipped, the entries after it are kept, and it is counted and logged
// once; the log is not cut.
func TestCacheDamagedMiddle(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(entry []byte){
		"a value byte":   func(e []byte) { e[len(e)-2] ^= 0x55 },
		"the length":     func(e []byte) { e[5] ^= 0x7f },
		"the marker":     func(e []byte) { e[0] = 'x' },
		"the whole head": func(e []byte) { copy(e, "{\"garbage\": 1, \"more\": 2}") },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			c := openCache(t, path, nil)
			putN(t, c, 0, 7)
			start := c.Stats().LogBytes
			putN(t, c, 7, 8)
			end := c.Stats().LogBytes
			putN(t, c, 8, 20)
			c.Close()
			os.Remove(path + ".idx")
			size := fileSize(t, path)

			b, _ := os.ReadFile(path)
			damage(b[start:end])
			os.WriteFile(path, b, 0o600)

			var logs logBuffer
			c = openCache(t, path, &logs)
			if n, _ := c.Len(); n != 19 {
				t.Errorf("%d entries, want 19", n)
			}
			wantValues(t, c, 0, 7)
			wantValues(t, c, 8, 20)
			if _, ok, _ := c.Get(testID("key-7")); ok {
				t.Error("the damaged entry answered")
			}
			st := c.Stats()
			if st.Damaged != 1 || st.DamagedBytes != end-start || st.TornBytes != 0 {
				t.Errorf("stats %+v: want 1 damaged entry of %d bytes", st, end-start)
			}
			if got := strings.Count(logs.String(), "skipped damaged entries"); got != 1 {
				t.Errorf("%d warnings, want 1: %s", got, logs.String())
			}
			if fileSize(t, path) != size {
				t.Error("the log was cut")
			}
			c.Close()

			// Reported once: the next open does not warn again.
			logs = logBuffer{}
			c = openCache(t, path, &logs)
			defer c.Close()
			if strings.Contains(logs.String(), "skipped") || c.Stats().Damaged != 1 {
				t.Errorf("second open: damaged %d, logs %s", c.Stats().Damaged, logs.String())
			}
		})
	}
}

func TestCacheRejectsForeignAndNewerFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ content, want string }{
		{"SQLite format 3\x00 and more", "not a rubricforge cache log"},
		{"rubricforge-cache-log/9\n and more bytes, enough for a header", `format "9" was written by a newer rubricforge`},
		{cacheMagic + strings.Repeat("\x00", headerSize), "header is damaged"},
	} {
		path := filepath.Join(t.TempDir(), "cache.db")
		os.WriteFile(path, []byte(tc.content), 0o600)
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.content[:10], err, tc.want)
		}
	}
}

// TestCacheCreationCutShort: a crash while a new cache's header was being
// written leaves a prefix of it; the next open starts the cache afresh.
func TestCacheCreationCutShort(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	os.WriteFile(path, []byte(cacheMagic[:10]), 0o600)
	c := openCache(t, path, nil)
	putN(t, c, 0, 1)
	c.Close()
	c = openCache(t, path, nil)
	defer c.Close()
	wantValues(t, c, 0, 1)
}

func TestCacheConcurrentPuts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil)
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			if err := c.Put(testID(fmt.Sprintf("key-%d", i)), []byte(fmt.Sprintf("value %d", i)), Usage{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c.Put(testID("key-0"), []byte("replaced"), Usage{})
	c.Close()
	if err := c.Put(testID("late"), nil, Usage{}); err == nil {
		t.Error("Put after Close succeeded")
	}
	c = openCache(t, path, nil)
	defer c.Close()
	if n, _ := c.Len(); n != 400 {
		t.Errorf("len %d, want 400", n)
	}
	wantValues(t, c, 1, 400)
	if v, _, _ := c.Get(testID("key-0")); string(v) != "replaced" {
		t.Errorf("the latest value must win: %q", v)
	}
}

// BenchmarkCachePut measures durable puts of rollout-sized values from many
// goroutines at once, as a busy run makes them.
func BenchmarkCachePut(b *testing.B) {
	c, err := Open(filepath.Join(b.TempDir(), "cache.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	value := bytes.Repeat([]byte("x"), 1500)
	u := Usage{Stage: "rollout", Model: "Qwen/Qwen3-8B", PromptTokens: 300, CompletionTokens: 400}
	b.SetParallelism(256)
	var n sync.Mutex
	i := 0
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Lock()
			i++
			k := i
			n.Unlock()
			id := testID(fmt.Sprint(k))
			if err := c.Put(id, value, u); err != nil {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}
