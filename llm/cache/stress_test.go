package cache

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/fsys/faultfs"
)

// stressLedger is what the stress test's callers were told: the answers
// made durable (Put or PutWritten's durable returned nil) and the
// identities whose Invalidate returned nil.
type stressLedger struct {
	mu          sync.Mutex
	durable     map[string]bool
	invalidated map[string]bool
	compactions int // compactions that returned nil
}

func (l *stressLedger) confirm(name string, invalidated bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if invalidated {
		l.invalidated[name] = true
		delete(l.durable, name)
		return
	}
	l.durable[name] = true
}

func (l *stressLedger) snapshot() (durable, invalidated []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := range l.durable {
		durable = append(durable, n)
	}
	for n := range l.invalidated {
		invalidated = append(invalidated, n)
	}
	return durable, invalidated
}

// waitForProgress waits until the stress callers have been told of at
// least durable answers and the compacting caller has finished at least
// compactions compactions: the point the test means to crash or close at,
// reached by work done rather than by time.
func (l *stressLedger) waitForProgress(t *testing.T, durable, compactions int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l.mu.Lock()
		d, c := len(l.durable), l.compactions
		l.mu.Unlock()
		if d >= durable && c >= compactions {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes the stress callers have %d durable answers and %d compactions; want %d and %d", d, c, durable, compactions)
		}
		time.Sleep(time.Millisecond)
	}
}

func stressValue(name string) []byte { return []byte(`{"answer":"` + name + `"}`) }

// stressWorker runs one caller's mix of PutWritten, Put, Get and
// Invalidate until stop closes or the cache is closed, checking that every
// hit is the value put for its identity.
func stressWorker(t *testing.T, c *Cache, w int, ledger *stressLedger, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	u := Usage{Stage: "rollout", Model: "m", PromptTokens: 3, CompletionTokens: 5}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		name := fmt.Sprintf("w%d-%d", w, i)
		var err error
		switch op := rng.IntN(10); {
		case op < 4:
			var durable func() error
			if durable, err = c.PutWritten(testID(name), stressValue(name), u); err == nil {
				if err = durable(); err == nil {
					ledger.confirm(name, false)
				}
			}
		case op < 6:
			if err = c.Put(testID(name), stressValue(name), u); err == nil {
				ledger.confirm(name, false)
			}
		case op < 7:
			if err = c.Put(testID(name), stressValue(name), u); err == nil {
				if err = c.Invalidate(testID(name)); err == nil {
					ledger.confirm(name, true)
				}
			}
		default:
			other := fmt.Sprintf("w%d-%d", rng.IntN(8), rng.IntN(i+1))
			var v []byte
			var ok bool
			if v, ok, err = c.Get(testID(other)); ok && !bytes.Equal(v, stressValue(other)) {
				t.Errorf("Get(%s) = %q; want %q", other, v, stressValue(other))
			}
		}
		if err != nil {
			if !expectedStop(err) {
				t.Errorf("worker %d: %v", w, err)
			}
			return
		}
	}
}

// wantLedger checks c against what callers were told before the ledger
// was read: every durable answer is there with its value, every
// invalidated identity misses.
func wantLedger(t *testing.T, what string, c *Cache, durable, invalidated []string) {
	t.Helper()
	for _, name := range durable {
		if v, ok, err := c.Get(testID(name)); err != nil || !ok || !bytes.Equal(v, stressValue(name)) {
			t.Errorf("%s: %s, durable before: %q %v %v", what, name, v, ok, err)
		}
	}
	for _, name := range invalidated {
		if v, ok, err := c.Get(testID(name)); err != nil || ok {
			t.Errorf("%s: %s, invalidated before: %q %v %v", what, name, v, ok, err)
		}
	}
}

// expectedStop says err ends a stress caller as the test meant: the cache
// was closed, or the simulated machine lost power.
func expectedStop(err error) bool {
	return errors.Is(err, crashfs.ErrCrashed) || strings.Contains(err.Error(), "the cache is closed")
}

// startStress opens a cache on disk whose index merges often and starts
// eight callers that PutWritten, Put, Get and Invalidate at once while
// another compacts. stop ends them and waits.
func startStress(t *testing.T, disk *crashfs.FS, path string) (c *Cache, ledger *stressLedger, stop func()) {
	c, err := Open(path, WithFS(disk), cacheMergeAt(16), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ledger = &stressLedger{durable: map[string]bool{}, invalidated: map[string]bool{}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() { stressWorker(t, c, w, ledger, done) })
	}
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := c.Compact(); err != nil {
				if !expectedStop(err) {
					t.Errorf("Compact: %v", err)
				}
				return
			}
			ledger.mu.Lock()
			ledger.compactions++
			ledger.mu.Unlock()
		}
	})
	return c, ledger, func() {
		close(done)
		wg.Wait()
	}
}

// newStressDisk is an empty simulated disk holding a synced /run.
func newStressDisk(t *testing.T) *crashfs.FS {
	disk := crashfs.New()
	if err := fsys.MkdirAllSynced(disk, "/run", 0o755); err != nil {
		t.Fatal(err)
	}
	return disk
}

// TestCacheStressPowerLoss lets the stress callers run until the machine
// loses power at a random operation (a random part of unsynced tails kept
// on the disk): the cache reopened from that disk answers everything
// callers were told was durable, and nothing but the values put. Under
// -race this also checks the locking of the write path.
func TestCacheStressPowerLoss(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			const path = "/run/cache.db"
			disk := newStressDisk(t)
			c, ledger, stop := startStress(t, disk, path)
			rng := rand.New(rand.NewPCG(seed, 11))
			ledger.waitForProgress(t, 20+rng.IntN(200), 1+rng.IntN(3))
			disk.CrashAt(len(disk.Ops()) + rng.IntN(40))
			for !disk.Crashed() {
				time.Sleep(time.Millisecond)
			}
			stop()
			c.Close() // fails: the disk is gone
			durable, invalidated := ledger.snapshot()
			if len(durable) == 0 {
				t.Fatal("no answer was durable before the power loss; the test checks nothing")
			}
			after, err := Open(path, WithFS(disk.CrashClone(crashfs.CrashOptions{Tear: rng})), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatalf("reopening after the power loss: %v", err)
			}
			defer after.Close()
			wantLedger(t, "after the power loss", after, durable, invalidated)
			t.Logf("%d answers durable, %d invalidated", len(durable), len(invalidated))
		})
	}
}

// TestCacheStressCloseWhileWriting closes the cache while the stress
// callers are still writing: Close waits for what was queued, and the
// cache reopened answers everything callers were told was durable.
func TestCacheStressCloseWhileWriting(t *testing.T) {
	t.Parallel()
	const path = "/run/cache.db"
	disk := newStressDisk(t)
	c, ledger, stop := startStress(t, disk, path)
	ledger.waitForProgress(t, 100, 2)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	stop()
	durable, invalidated := ledger.snapshot()
	if len(durable) == 0 {
		t.Fatal("no answer was durable before Close; the test checks nothing")
	}
	reopened, err := Open(path, WithFS(disk), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("reopening after Close: %v", err)
	}
	defer reopened.Close()
	wantLedger(t, "after Close", reopened, durable, invalidated)
}

// TestPutWrittenReturnsOnceTheEntryIsInTheFile: the kill bound. A request
// slot is freed once PutWritten returns, so by then the answer must be in
// the log file (the kernel's, not only the process's), even while its
// fsync has not finished.
func TestPutWrittenReturnsOnceTheEntryIsInTheFile(t *testing.T) {
	t.Parallel()
	ffs := &faultfs.FS{}
	path := filepath.Join(t.TempDir(), "cache.db")
	c := openCache(t, path, nil, WithFS(ffs))
	defer c.Close()
	durable, unhold := writtenNotSynced(t, c, ffs, "x", "the written answer")
	defer unhold()
	log, err := os.ReadFile(path)
	unhold()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("the written answer")) {
		t.Error("PutWritten returned before its entry was in the log file")
	}
	if err := durable(); err != nil {
		t.Fatal(err)
	}
}
