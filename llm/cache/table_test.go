package cache

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
)

// cacheMergeAt sets how many keys the index holds in memory before a merge.
func cacheMergeAt(n int) Option { return func(o *cacheOptions) { o.mergeAt = n } }

func testWriter(t *testing.T) tableWriter {
	return tableWriter{fs: fsys.OS, path: filepath.Join(t.TempDir(), "t.idx")}
}

// writeTable writes adds (sorted here) over old at bits.
func writeTable(t *testing.T, w tableWriter, old *table, adds []keyLoc, bits uint) *table {
	t.Helper()
	adds = slices.Clone(adds)
	slices.SortFunc(adds, func(a, b keyLoc) int { return cmp.Compare(a.key, b.key) })
	tab, err := w.writeBits(old, adds, []byte("trailer"), bits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.close() })
	return tab
}

func wantTable(t *testing.T, tab *table, want map[uint64]uint64, absent []uint64) {
	t.Helper()
	for k, loc := range want {
		if got, err := tab.get(k); err != nil || got != loc {
			t.Fatalf("key %#x: %d %v, want %d", k, got, err, loc)
		}
	}
	for _, k := range absent {
		if got, err := tab.get(k); err != nil || got != 0 {
			t.Fatalf("absent key %#x: %d %v", k, got, err)
		}
	}
	n := 0
	tab.each(func(k, loc uint64) error {
		n++
		if want[k] != loc {
			t.Errorf("each: %#x = %d, want %d", k, loc, want[k])
		}
		return nil
	})
	if n != len(want) || tab.used != int64(len(want)) {
		t.Errorf("each: %d slots, used %d; want %d", n, tab.used, len(want))
	}
}

// TestTableClusters: keys crowding the end of a window carry into the next
// one, keys crowding the last home run into the tail, and a rehash into a
// table twice the size (or a merge into one of the same size) keeps every
// key; a key added again takes its new loc.
func TestTableClusters(t *testing.T) {
	t.Parallel()
	const bits = 17 // two windows of homes
	w := testWriter(t)
	want := map[uint64]uint64{}
	var adds []keyLoc
	add := func(home, i uint64) {
		k := home<<(64-bits) | i<<8 | 1
		want[k] = 100 + uint64(len(adds))
		adds = append(adds, keyLoc{k, want[k]})
	}
	for i := range uint64(300) {
		add(tableChunk-2, i) // carried into the second window
		add(1<<bits-1, i)    // into the tail
		add(i*401%(1<<bits), 7)
	}
	tab := writeTable(t, w, nil, adds, bits)
	wantTable(t, tab, want, []uint64{0x1234, (tableChunk-2)<<(64-bits) | 5})

	var more []keyLoc
	for i, kl := range adds[:50] { // replaced
		want[kl.key] = uint64(5000 + i)
		more = append(more, keyLoc{kl.key, want[kl.key]})
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		k := r.Uint64()
		want[k] = uint64(9000 + i)
		more = append(more, keyLoc{k, want[k]})
	}
	wantTable(t, writeTable(t, w, tab, more, bits), want, nil)
	wantTable(t, writeTable(t, w, tab, more, bits+1), want, nil)
	wantTable(t, writeTable(t, w, tab, more, bits+3), want, nil)
}

// TestTableFull: more keys with one home than the tail holds is
// errTableFull, and a merge gives up after a few doublings instead of
// growing without end.
func TestTableFull(t *testing.T) {
	t.Parallel()
	w := testWriter(t)
	var adds []keyLoc
	for i := range uint64(tableTail + 10) {
		adds = append(adds, keyLoc{0xFFFFFFFF<<32 | i, 1 + i})
	}
	if _, err := w.writeBits(nil, adds, nil, tableMinBits); !errors.Is(err, errTableFull) {
		t.Fatalf("writeBits: %v, want errTableFull", err)
	}
	if _, err := w.write(nil, adds, nil); !errors.Is(err, errTableFull) {
		t.Fatalf("write: %v, want errTableFull", err)
	}
	if _, err := os.Stat(w.tmp()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temp file is left: %v", err)
	}
}

// TestIndexMergesAndReopens: an index that merges every 500 keys finds
// every key and its collisions (several identities under one key), none
// it was not given, and the same after its table is read back.
func TestIndexMergesAndReopens(t *testing.T) {
	t.Parallel()
	w := testWriter(t)
	ix := newIndex(w, 500)
	want := map[uint64][]uint64{}
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 0, 10000)
	for i := range 10000 { // 20 merges, the table doubling from 2^10 homes to 2^14
		k := r.Uint64()
		if i%1000 == 999 {
			k = keys[r.IntN(len(keys))] // a collision
		} else {
			keys = append(keys, k)
		}
		loc := uint64(100 + i)
		if i%7 == 0 {
			loc |= locTombstone
		}
		if err := ix.add(k, loc); err != nil {
			t.Fatal(err)
		}
		want[k] = append(want[k], loc)
		if ix.full() {
			tab, err := ix.merged([]byte("meta"), false)
			if err != nil {
				t.Fatal(err)
			}
			ix.install(tab)
		}
	}
	for i, k := range keys[:100] { // a replaced entry
		same := func(o uint64) bool { return o == want[k][0] }
		if err := ix.place(k, uint64(50000+i), same); err != nil {
			t.Fatal(err)
		}
		want[k][0] = uint64(50000 + i)
	}
	wantIndex(t, ix, want)
	tab, err := ix.merged([]byte("meta"), true)
	if err != nil {
		t.Fatal(err)
	}
	ix.install(tab)
	ix.close()

	tab, trailer, err := openTable(fsys.OS, w.path)
	if err != nil {
		t.Fatal(err)
	}
	back := newIndex(w, 500)
	defer back.close()
	meta, err := back.adopt(tab, trailer)
	if err != nil || string(meta) != "meta" {
		t.Fatalf("adopt: %q %v", meta, err)
	}
	if back.responses != ix.responses || back.tombstones != ix.tombstones || back.len() != 10000 {
		t.Errorf("counts %d/%d, want %d/%d", back.responses, back.tombstones, ix.responses, ix.tombstones)
	}
	wantIndex(t, back, want)
}

func wantIndex(t *testing.T, ix *index, want map[uint64][]uint64) {
	t.Helper()
	for k, locs := range want {
		got, err := ix.candidates(k, nil)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, slices.Sorted(slices.Values(locs))) {
			t.Fatalf("key %#x: %v %v, want %v", k, got, err, locs)
		}
	}
	if got, err := ix.candidates(42, nil); err != nil || len(got) != 0 {
		t.Fatalf("absent key: %v %v", got, err)
	}
	n := 0
	if err := ix.each(func(uint64, uint64) { n++ }); err != nil || n != ix.len() {
		t.Fatalf("each: %d entries (%v), want %d", n, err, ix.len())
	}
}

// TestCacheIndexMerges: a cache whose index merges every 40 keys answers
// every key; after a kill the next open reads the index file of the last
// merge and only the log after it; after Close, none; compaction keeps
// every answer.
func TestCacheIndexMerges(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil, cacheMergeAt(40))
	putN(t, c, 0, 500)
	wantValues(t, c, 0, 500)
	c.close(false)

	c = openCache(t, path, nil, cacheMergeAt(40))
	st := c.Stats()
	if !st.IndexLoaded || st.ScannedBytes == 0 || st.ScannedBytes > st.LogBytes/5 || st.Entries != 500 {
		t.Fatalf("after a kill: %+v; want the last merge's index loaded and the log after it read", st)
	}
	wantValues(t, c, 0, 500)
	putN(t, c, 0, 100) // replaced
	c.Close()

	c = openCache(t, path, nil, cacheMergeAt(40))
	if st := c.Stats(); !st.IndexLoaded || st.ScannedBytes != 0 || st.Entries != 500 || st.Records != 600 {
		t.Fatalf("after Close: %+v", st)
	}
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	wantValues(t, c, 0, 500)
	c.Close()
	c = openCache(t, path, nil, cacheMergeAt(40))
	defer c.Close()
	if st := c.Stats(); !st.IndexLoaded || st.Entries != 500 || st.Records != 501 {
		t.Fatalf("after compaction: %+v", st)
	}
	wantValues(t, c, 0, 500)
}

// TestCacheIndexCrash crashes two sessions of a cache whose index merges
// often at every operation that changes the disk (keeping a random part of unsynced
// tails at every other point): the reopened cache answers every Put that
// returned, with its own value, and nothing else.
func TestCacheIndexCrash(t *testing.T) {
	t.Parallel()
	const puts = 120
	path := "/run/cache.db"
	// Two sessions, so that the second starts from the index file the
	// first closed with and merges past it.
	session := func(f *crashfs.FS) (done int) {
		for _, to := range []int{puts / 2, puts} {
			c, err := Open(path, WithFS(f), cacheMergeAt(16), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				return done
			}
			for ; done < to; done++ {
				if err := c.Put(testID(fmt.Sprintf("key-%d", done)), []byte(fmt.Sprintf("value %d", done)), Usage{}); err != nil {
					c.Close()
					return done
				}
			}
			c.Close()
		}
		return done
	}
	base := crashfs.New()
	if err := fsys.MkdirAllSynced(base, "/run", 0o755); err != nil {
		t.Fatal(err)
	}
	whole := base.CrashClone(crashfs.CrashOptions{})
	session(whole)
	var points []int
	for _, op := range whole.Ops() {
		if op.Mutates() {
			points = append(points, op.Index)
		}
	}
	tear := rand.New(rand.NewPCG(5, 6))
	loaded := 0
	every := longtest.Pick(t, 3, 1) // a cover: every third point (odd and even ones: torn and not), the first and the last
	for n, at := range points {
		if n%every != 0 && n != len(points)-1 {
			continue
		}
		f := base.CrashClone(crashfs.CrashOptions{})
		f.CrashAt(at)
		done := session(f)
		var o crashfs.CrashOptions
		if n%2 == 1 {
			o.Tear = tear
		}
		after := f.CrashClone(o)
		c, err := Open(path, WithFS(after), WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("crash at %s: reopening: %v", f.Ops()[at], err)
		}
		if c.Stats().IndexLoaded {
			loaded++
		}
		for i := range puts {
			v, ok, err := c.Get(testID(fmt.Sprintf("key-%d", i)))
			if err != nil || (ok && string(v) != fmt.Sprintf("value %d", i)) || (!ok && i < done) {
				t.Fatalf("crash at %s (%d puts returned): key-%d: %q %v %v", f.Ops()[at], done, i, v, ok, err)
			}
		}
		c.Close()
	}
	t.Logf("%d crash points, every %d tried; %d reopens used an index file", len(points), every, loaded)
	if loaded == 0 {
		t.Error("no reopen used an index file")
	}
}

// TestCacheIndexMemory: an open cache of 30,000 entries holds almost none
// of its index in the heap: only the keys since the last merge (at most
// 1,024 here). An index kept in the heap costs 16 bytes or more an entry
// (the test fails with cacheMergeAt(1<<30): no merge while opening).
func TestCacheIndexMemory(t *testing.T) {
	// Not parallel: it measures the heap, which other tests would share.
	const n = 30_000
	path := filepath.Join(t.TempDir(), "cache.db")
	buildLog(t, path, n, 10)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c := openCache(t, path, nil, cacheMergeAt(1024))
	defer c.Close()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	perEntry := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / n
	t.Logf("%.1f heap bytes per entry", perEntry)
	if got, _ := c.Len(); got != n || perEntry > 4 {
		t.Errorf("%d entries, %.1f bytes each; want %d under 4", got, perEntry, n)
	}
	runtime.KeepAlive(c)
}

// BenchmarkCacheGet looks up random keys of a cache of 200,000 entries
// whose index is in its file.
func BenchmarkCacheGet(b *testing.B) {
	const n = 200_000
	path := filepath.Join(b.TempDir(), "cache.db")
	buildLog(b, path, n, 200)
	c, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := rand.New(rand.NewPCG(7, 8))
	for b.Loop() {
		i := r.IntN(n)
		id := Identity{Key: uint64(i) * 0x9E3779B97F4A7C15}
		id.Digest[0], id.Digest[1], id.Digest[2] = byte(i), byte(i>>8), byte(i>>16)
		if _, ok, err := c.Get(id); !ok || err != nil {
			b.Fatalf("entry %d: %v %v", i, ok, err)
		}
	}
}

// BenchmarkIndexMerge1M merges 65,536 new keys into an index file of 1M
// keys: what the cache's writer does every 65,536 new keys.
func BenchmarkIndexMerge1M(b *testing.B) {
	w := tableWriter{fs: fsys.OS, path: filepath.Join(b.TempDir(), "t.idx")}
	r := rand.New(rand.NewPCG(9, 10))
	adds := make([]keyLoc, 1<<20)
	for i := range adds {
		adds[i] = keyLoc{r.Uint64(), uint64(100 + i)}
	}
	slices.SortFunc(adds, func(a, b keyLoc) int { return cmp.Compare(a.key, b.key) })
	tab, err := w.write(nil, adds, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tab.close()
	ix := newIndex(w, defaultMergeAt)
	ix.tab = tab
	for b.Loop() {
		b.StopTimer()
		ix.delta = map[uint64]uint64{}
		for i := range defaultMergeAt {
			ix.delta[r.Uint64()] = uint64(1<<30 + i)
		}
		b.StartTimer()
		t, err := ix.merged(nil, false)
		if err != nil {
			b.Fatal(err)
		}
		t.close()
	}
}
