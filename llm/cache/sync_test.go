package cache

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys/faultfs"
)

// TestSyncsArePacedWhileAnswersKeepComing: while puts keep arriving (32
// callers, 50 puts each), the log is synced at most once every minSyncGap
// (one journal commit for many answers, not one for every few), and every
// Put that returned is in the log after a reopen. It runs in fake time (synctest): the clock moves
// only while every goroutine waits, so the pacing is what spaces the syncs
// out, not how long an fsync of this machine's disk takes.
func TestSyncsArePacedWhileAnswersKeepComing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, syncsArePaced)
}

func syncsArePaced(t *testing.T) {
	ffs := &faultfs.FS{}
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil, WithFS(ffs))
	before := ffs.Count("sync cache.db")
	var puts atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 32 {
		wg.Go(func() {
			for i := range 50 {
				if err := c.Put(testID(fmt.Sprintf("w%d-%d", w, i)), []byte(`{"ok":true}`), Usage{Stage: "rollout", Model: "m"}); err != nil {
					t.Error(err)
					return
				}
				puts.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	syncs := ffs.Count("sync cache.db") - before
	// One sync a gap, plus slack for the syncs at either end: +2 was
	// exceeded by one (52 for 51 in 245ms) in one CI run of six. Without
	// the pacing there is a sync for nearly every put (1,600 here), so the
	// slack hides nothing this test is for.
	if limit := int(elapsed/minSyncGap) + 5; syncs > limit {
		t.Errorf("%d syncs for %d puts in %v, want at most %d (one every %v)", syncs, puts.Load(), elapsed, limit, minSyncGap)
	}
	t.Logf("%d syncs for %d puts in %v", syncs, puts.Load(), elapsed)
	if syncs == 0 || puts.Load() < int64(syncs) {
		t.Errorf("%d syncs for %d puts", syncs, puts.Load())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openCache(t, path, nil)
	defer c.Close()
	if n, _ := c.Len(); int64(n) != puts.Load() {
		t.Errorf("%d entries after a reopen, want the %d puts that returned", n, puts.Load())
	}
}
