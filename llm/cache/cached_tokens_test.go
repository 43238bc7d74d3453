package cache

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSpentKeepsCachedPromptTokens: the prompt tokens a server's prefix
// cache reused, stored with each paid response, are in Spent however the
// cache is opened (from its index file, from the whole log), after a
// compaction that drops the responses a later one replaced, and in a
// merge; responses stored without them count none.
func TestSpentKeepsCachedPromptTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	id := func(i byte) Identity { return Identity{Key: uint64(i), Digest: [32]byte{i}} }
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range []Usage{
		{Stage: "satisfy", Model: "m", PromptTokens: 1000, CachedPromptTokens: 800, CompletionTokens: 5},
		{Stage: "satisfy", Model: "m", PromptTokens: 900, CachedPromptTokens: 700, CompletionTokens: 5},
		{Stage: "satisfy", Model: "m", PromptTokens: 300, CompletionTokens: 5}, // a server that reports none
		{Stage: "rollout", Model: "m", PromptTokens: 50, CachedPromptTokens: 16, CompletionTokens: 500, Batch: true},
	} {
		if err := c.Put(id(byte(i%3)), []byte{'r', byte(i)}, u); err != nil { // the fourth replaces the first
			t.Fatal(err)
		}
	}
	want := map[string]int64{"satisfy": 1500, "rollout": 16}
	check := func(what string, c *Cache) {
		t.Helper()
		spent, complete := c.Spent()
		if !complete {
			t.Fatalf("%s: spend incomplete", what)
		}
		got := map[string]int64{}
		for _, s := range spent {
			got[s.Stage] += s.CachedPromptTokens
		}
		if got["satisfy"] != want["satisfy"] || got["rollout"] != want["rollout"] {
			t.Errorf("%s: cached prompt tokens %v, want %v", what, got, want)
		}
	}
	check("written", c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Stats().IndexLoaded {
		t.Error("the index file was not used")
	}
	check("reopened from its index", c)
	c.Close()
	if err := os.Remove(IndexPath(path)); err != nil {
		t.Fatal(err)
	}
	c, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	check("reopened from its log", c)
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	check("compacted", c)
	c.Close()
	merged := filepath.Join(dir, "merged.db")
	if _, err := Merge(merged, []string{path}); err != nil {
		t.Fatal(err)
	}
	m, err := Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	check("merged", m)
}
