package cache

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestMergeCaches: the merged cache answers every live response of its
// sources, each once, and its Spent is the sum of theirs, the spend of
// entries a source replaced and compacted away included; a response a
// source copied from a base is not counted as paid.
func TestMergeCaches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id := func(i byte) Identity { return Identity{Key: uint64(i), Digest: [32]byte{i}} }
	put := func(c *Cache, i byte, stage string, prompt int64) {
		t.Helper()
		if err := c.Put(id(i), []byte{'r', i}, Usage{Stage: stage, Model: "m", PromptTokens: prompt, CompletionTokens: 1}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Open(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	put(a, 1, "rollout", 10)
	put(a, 1, "rollout", 20) // replaces the first: both were paid
	put(a, 2, "judge", 5)
	if _, err := a.Compact(); err != nil {
		t.Fatal(err)
	}
	spentA, _ := a.Spent()
	a.Close()

	b, err := Open(filepath.Join(dir, "b.db"), WithBase(filepath.Join(dir, "a.db")))
	if err != nil {
		t.Fatal(err)
	}
	put(b, 3, "rollout", 7)
	if _, ok, err := b.Get(id(2)); !ok || err != nil { // copied from a, not paid by b
		t.Fatalf("b's base: %v %v", ok, err)
	}
	spentB, _ := b.Spent()
	b.Close()

	dst := filepath.Join(dir, "merged.db")
	res, err := Merge(dst, []string{filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries != 3 || res.Repeats != 1 {
		t.Errorf("copied %d responses (%d repeats), want 3 and 1", res.Entries, res.Repeats)
	}
	m, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, i := range []byte{1, 2, 3} {
		if v, ok, err := m.Get(id(i)); !ok || err != nil || !slices.Equal(v, []byte{'r', i}) {
			t.Errorf("response %d: %q %v %v", i, v, ok, err)
		}
	}
	want := map[string]Spend{}
	for _, s := range append(spentA, spentB...) {
		w := want[s.Stage]
		w.Responses += s.Responses
		w.PromptTokens += s.PromptTokens
		w.CompletionTokens += s.CompletionTokens
		want[s.Stage] = w
	}
	got, complete := m.Spent()
	if !complete || len(got) != len(want) {
		t.Fatalf("merged spend %+v, want %+v", got, want)
	}
	for _, s := range got {
		w := want[s.Stage]
		if s.Responses != w.Responses || s.PromptTokens != w.PromptTokens || s.CompletionTokens != w.CompletionTokens {
			t.Errorf("stage %s: merged spend %+v, the sources' %+v", s.Stage, s, w)
		}
	}
	if want["rollout"].PromptTokens != 37 {
		t.Errorf("the sources' rollout spend is %d prompt tokens, want 37 (10 + 20 replaced + 7)", want["rollout"].PromptTokens)
	}
}
