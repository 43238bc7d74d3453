package cache

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBaseCacheInUse: a base that its own run is writing is refused with a
// message saying so; a tombstone in the variant hides the base's answer.
func TestBaseCacheInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	basePath := filepath.Join(dir, "base.db")
	base := openCache(t, basePath, nil)
	putN(t, base, 0, 3)
	if _, err := Open(filepath.Join(dir, "v.db"), WithBase(basePath)); err == nil || !strings.Contains(err.Error(), "a run is writing it") {
		t.Errorf("base in use: %v", err)
	}
	base.Close()

	v := openCache(t, filepath.Join(dir, "v.db"), nil, WithBase(basePath))
	defer v.Close()
	if err := v.Invalidate(testID("key-1")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := v.Get(testID("key-1")); ok {
		t.Error("an invalidated identity was answered from the base")
	}
	wantValues(t, v, 2, 3)
}
