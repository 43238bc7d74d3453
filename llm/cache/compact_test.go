package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys/faultfs"
)

// deadCache fills a cache with 20 entries, then replaces 5, invalidates 5,
// and returns the spend before compaction.
func deadCache(t *testing.T, c *Cache) []Spend {
	t.Helper()
	putN(t, c, 0, 20)
	for i := range 5 {
		if err := c.Put(testID(fmt.Sprintf("key-%d", i)), []byte(fmt.Sprintf("value %d", i)), Usage{Stage: "judge", Model: "j", PromptTokens: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var dead []Identity
	for i := 5; i < 10; i++ {
		dead = append(dead, testID(fmt.Sprintf("key-%d", i)))
	}
	if err := c.Invalidate(dead...); err != nil {
		t.Fatal(err)
	}
	spent, _ := c.Spent()
	return spent
}

func wantCompacted(t *testing.T, c *Cache, spent []Spend) {
	t.Helper()
	wantValues(t, c, 0, 5)
	wantValues(t, c, 10, 20)
	for i := 5; i < 10; i++ {
		if _, ok, _ := c.Get(testID(fmt.Sprintf("key-%d", i))); ok {
			t.Errorf("key-%d was invalidated but answers", i)
		}
	}
	if got, _ := c.Spent(); !slices.Equal(got, spent) {
		t.Errorf("spend changed:\n%+v\nwant\n%+v", got, spent)
	}
}

// TestCacheCompact: compaction keeps each identity's latest entry (and the
// tombstones, which must keep hiding a base cache's answers), drops the
// rest, keeps the spend, and saves an index for the new log.
func TestCacheCompact(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil)
	spent := deadCache(t, c)
	before := c.Stats()
	res, err := c.Compact()
	if err != nil {
		t.Fatal(err)
	}
	// 20 puts, 5 replacements, 5 tombstones: 30 records; 15 responses, 5
	// tombstones and one spend record (the replaced rollouts) remain.
	if res.RecordsBefore != 30 || res.RecordsAfter != 21 || res.Entries != 15 || res.Tombstones != 5 || res.Dropped != 10 || res.Damaged != 0 ||
		res.BytesAfter >= res.BytesBefore || res.BytesBefore != before.LogBytes {
		t.Errorf("result %+v", res)
	}
	wantCompacted(t, c, spent)
	putN(t, c, 20, 21) // the cache goes on after compaction
	c.close(false)

	c = openCache(t, path, nil)
	if st := c.Stats(); !st.IndexLoaded || st.ScannedBytes == 0 {
		t.Errorf("after compaction and a kill: %+v; want the compaction's index and the put after it read", st)
	}
	wantCompacted(t, c, append([]Spend{}, spentPlus(spent, 20)...))
	wantValues(t, c, 20, 21)
	c.Close()

	c = openCache(t, path, nil, WithFS(noIndexFS()))
	defer c.Close()
	wantCompacted(t, c, spentPlus(spent, 20))
}

// spentPlus adds the usage putN gives entry i.
func spentPlus(spent []Spend, i int) []Spend {
	out := slices.Clone(spent)
	for j := range out {
		if out[j].Stage == "rollout" {
			out[j].Responses++
			out[j].PromptTokens += int64(10 + i)
			out[j].CompletionTokens += int64(i)
		}
	}
	return out
}

// TestCacheCompactFailureKeepsTheLog: a compaction that fails at any step
// before its rename leaves the old log in use and whole; a failed directory
// sync after it stops writing.
func TestCacheCompactFailureKeepsTheLog(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"open", "write", "sync", "rename", "syncdir"} {
		t.Run(op, func(t *testing.T) {
			ffs := &faultfs.FS{}
			path := filepath.Join(t.TempDir(), "cache.db")
			c := openCache(t, path, nil, WithFS(ffs))
			spent := deadCache(t, c)
			ffs.SetFail(func(o, name string) error {
				if o == op && (filepath.Base(name) == ".cache.db.compact" || op == "syncdir") {
					return syscall.EIO
				}
				return nil
			})
			_, err := c.Compact()
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("Compact: %v; want EIO", err)
			}
			ffs.SetFail(nil)
			wantCompacted(t, c, spent)
			err = c.Put(testID("after"), []byte("v"), Usage{})
			if (op == "syncdir") != (err != nil) {
				t.Errorf("Put after a failed %s: %v", op, err)
			}
			if err == nil {
				spent = append([]Spend{{Responses: 1}}, spent...)
			}
			c.Close()
			c = openCache(t, path, nil)
			defer c.Close()
			wantCompacted(t, c, spent)
		})
	}
}

// TestCompactCache is the library function behind `distill cache compact`:
// it refuses a cache in use and compacts one that is not.
func TestCompactCache(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil)
	spent := deadCache(t, c)
	if _, err := Compact(path); err == nil {
		t.Error("compacted a cache in use")
	}
	c.Close()
	res, err := Compact(path)
	if err != nil || res.Entries != 15 {
		t.Fatalf("%+v %v", res, err)
	}
	c = openCache(t, path, nil)
	defer c.Close()
	wantCompacted(t, c, spent)
}

// TestCacheCompactDropsDamaged: damaged entries skipped by an open are gone
// after compaction, which counts them.
func TestCacheCompactDropsDamaged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil)
	putN(t, c, 0, 3)
	start := c.Stats().LogBytes
	putN(t, c, 3, 6)
	c.close(false)
	b, _ := os.ReadFile(path)
	b[start+20] ^= 1
	os.WriteFile(path, b, 0o600)

	c = openCache(t, path, nil)
	defer c.Close()
	res, err := c.Compact()
	if err != nil || res.Damaged != 1 || res.Dropped != 0 || res.Entries != 5 {
		t.Fatalf("%+v %v", res, err)
	}
	if st := c.Stats(); st.Damaged != 0 || st.Entries != 5 {
		t.Errorf("after compaction: %+v", st)
	}
	wantValues(t, c, 0, 3)
	wantValues(t, c, 4, 6)
}
