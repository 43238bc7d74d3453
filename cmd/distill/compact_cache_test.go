package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// cacheWithDead writes a cache of live answers of which dead were replaced
// once (leaving a dead entry each).
//
// It is written under another name and copied (a new file the test
// process never locked): a process another test starts while the cache is
// open holds a copy of its descriptor until it execs, and with it the
// cache's flock after Close, so that an open of the same file right after
// could find it "locked by another process" (once in a few runs with other
// tests starting processes in parallel).
func cacheWithDead(t *testing.T, live, dead int) string {
	t.Helper()
	dir := t.TempDir()
	written, path := filepath.Join(dir, "written.db"), filepath.Join(dir, "cache.db")
	c, err := cache.Open(written)
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("x"), 500)
	for i := range live {
		req := llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: fmt.Sprint("q", i)}}}
		for range 1 + min(1, max(0, dead-i)) {
			if err := c.Put(llm.IdentityOf(req), value, cache.Usage{Stage: "rollout", Model: "m"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{written: path, cache.IndexPath(written): cache.IndexPath(path)} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestCompactRewritesTheCacheOnlyWhenWorthIt: distill compact leaves a
// cache whose dead entries are under 5% of its log as it is (before, 50
// dead entries rewrote a 429 MiB cache), and rewrites one above it.
func TestCompactRewritesTheCacheOnlyWhenWorthIt(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	few := cacheWithDead(t, 400, 8)
	st, _ := os.Stat(few)
	var out bytes.Buffer
	if err := compactCache(few, log, &out); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(few); after.Size() != st.Size() || !strings.Contains(out.String(), "8 dead entries (2.0% of 408), under the 5% worth a rewrite") {
		t.Errorf("8 dead of 408: %d -> %d bytes; %q", st.Size(), after.Size(), out.String())
	}
	many := cacheWithDead(t, 400, 40)
	st, _ = os.Stat(many)
	out.Reset()
	if err := compactCache(many, log, &out); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(many); after.Size() >= st.Size() || !strings.Contains(out.String(), "dropped 40 dead entries") {
		t.Errorf("40 dead of 440: %d -> %d bytes; %q", st.Size(), after.Size(), out.String())
	}
}
