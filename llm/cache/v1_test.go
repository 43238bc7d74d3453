package cache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
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
// converted on open and keeps every answer; an identity is answered by the
// old entry with its key, which it then owns. (llm's
// TestChatAnswersFromAFormat1Cache asks it through Chat.)
func TestCacheFormat1IsConverted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	ids := []Identity{testID("q0"), testID("q1"), testID("q2")}
	old := []byte(`{"choices":[{"message":{"content":"an answer paid for long ago"}}]}`)
	writeV1(t, path, []string{ids[0].String(), ids[1].String(), "not-a-cache-key", ids[1].String()},
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
	for _, id := range ids[:2] {
		if v, ok, err := cache.Get(id); !ok || err != nil || !bytes.Equal(v, old) {
			t.Errorf("%s: %q %v %v; want the old answer", id, v, ok, err)
		}
	}
	if _, ok, err := cache.Get(ids[2]); ok || err != nil {
		t.Errorf("an identity the old file did not hold: %v %v; want a miss", ok, err)
	}
	if err := cache.Put(ids[2], []byte("a new answer"), Usage{}); err != nil {
		t.Fatal(err)
	}
	// The old entry belongs to the identity that claimed it: another
	// identity with its key (a collision) misses.
	if _, ok, _ := cache.Get(collidingID(ids[0], "other")); ok {
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
	if _, ok, _ := cache.Get(ids[0]); !ok {
		t.Error("the claimed answer is gone")
	}
}

// TestCacheFormat1AsBase: a format-1 cache can be a base; it is read, not
// converted.
func TestCacheFormat1AsBase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	basePath := filepath.Join(dir, "old.db")
	id, value := testID("q"), []byte(`{"choices":[]}`)
	writeV1(t, basePath, []string{id.String()}, [][]byte{value})
	before, _ := os.ReadFile(basePath)
	c := openCache(t, filepath.Join(dir, "cache.db"), nil, WithBase(basePath))
	defer c.Close()
	if v, ok, err := c.Get(id); !ok || err != nil || !bytes.Equal(v, value) {
		t.Errorf("%q %v %v", v, ok, err)
	}
	if after, _ := os.ReadFile(basePath); !bytes.Equal(before, after) {
		t.Error("the format-1 base was changed")
	}
}
