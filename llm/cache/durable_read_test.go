package cache

import (
	"errors"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys/faultfs"
)

// failSyncOf makes every fsync of the log named base fail with EIO.
func failSyncOf(base string) func(op, name string) error {
	return func(op, name string) error {
		if op == "sync" && filepath.Base(name) == base {
			return syscall.EIO
		}
		return nil
	}
}

// holdLogSyncs blocks every fsync of the log named base until release is
// called (again harmlessly; a test defers it after Close, which waits for
// the syncs); syncing receives when the first has started.
func holdLogSyncs(ffs *faultfs.FS, base string) (syncing <-chan struct{}, release func()) {
	held := make(chan struct{})
	started := make(chan struct{}, 1)
	ffs.SetHold(func(op, name string) {
		if op == "sync" && filepath.Base(name) == base {
			select {
			case started <- struct{}{}:
			default:
			}
			<-held
		}
	})
	var once sync.Once
	return started, func() {
		once.Do(func() {
			ffs.SetHold(nil)
			close(held)
		})
	}
}

// writtenNotSynced PutWritten's value under testID(name) to c (a log
// cache.db on ffs) and returns once its entry is written and its fsync has
// started and is held, until unhold.
func writtenNotSynced(t *testing.T, c *Cache, ffs *faultfs.FS, name, value string) (durable func() error, unhold func()) {
	t.Helper()
	syncing, unhold := holdLogSyncs(ffs, "cache.db")
	durable, err := c.PutWritten(testID(name), []byte(value), Usage{Stage: "rollout", Model: "m"})
	if err != nil {
		unhold()
		t.Fatal(err)
	}
	<-syncing
	return durable, unhold
}

// TestGetDoesNotServeAnAnswerWhoseSyncFailed: PutWritten's entry is in the
// log (and the page cache) before it is durable. When its fsync fails the
// answer was never durable and the page cache cannot be trusted, so no
// Get may hand it out: a caller would build on an answer a power loss
// takes away.
func TestGetDoesNotServeAnAnswerWhoseSyncFailed(t *testing.T) {
	t.Parallel()
	ffs := &faultfs.FS{}
	c := openCache(t, filepath.Join(t.TempDir(), "cache.db"), nil, WithFS(ffs))
	defer c.Close()
	putN(t, c, 0, 1)
	ffs.SetFail(failSyncOf("cache.db"))
	durable, err := c.PutWritten(testID("x"), []byte("not durable"), Usage{Stage: "rollout", Model: "m"})
	if err != nil {
		t.Fatalf("PutWritten: %v; want the write to succeed", err)
	}
	if err := durable(); err == nil {
		t.Fatal("durable() = nil after a failed fsync")
	}
	if v, ok, err := c.Get(testID("x")); ok {
		t.Errorf("Get after the entry's fsync failed = %q, %v, %v; want a miss", v, ok, err)
	}
	wantValues(t, c, 0, 1) // what was durable before the failure is still served
}

// TestGetWaitsForTheAnswerToBeDurable: a Get of an identity whose entry is
// written but not yet synced (a PutWritten whose sync is pending) returns
// it only once the sync has made it durable.
func TestGetWaitsForTheAnswerToBeDurable(t *testing.T) {
	t.Parallel()
	ffs := &faultfs.FS{}
	c := openCache(t, filepath.Join(t.TempDir(), "cache.db"), nil, WithFS(ffs))
	defer c.Close()
	durable, unhold := writtenNotSynced(t, c, ffs, "x", "answer")
	defer unhold()
	type got struct {
		v   []byte
		ok  bool
		err error
	}
	gets := make(chan got, 1)
	waiting := make(chan struct{})
	c.awaitingSync = func() { close(waiting) }
	go func() {
		v, ok, err := c.Get(testID("x"))
		gets <- got{v, ok, err}
	}()
	select {
	case g := <-gets:
		t.Fatalf("Get returned %q, %v, %v while its entry's fsync had not finished; want it to wait for the sync", g.v, g.ok, g.err)
	case <-waiting: // Get found the entry and waits for its sync, which is held
	}
	select {
	case g := <-gets:
		t.Fatalf("Get returned %q, %v, %v while its entry's fsync had not finished; want it to wait for the sync", g.v, g.ok, g.err)
	default:
	}
	unhold()
	if err := durable(); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-gets:
		if !g.ok || g.err != nil || string(g.v) != "answer" {
			t.Errorf("Get once durable = %q, %v, %v; want the answer", g.v, g.ok, g.err)
		}
	case <-time.After(time.Minute): // a guard against a hang, not a speed bound
		t.Fatal("Get still waiting after the entry was synced")
	}
}

// TestCompactAfterAFailedSyncWritesNothing: a compaction queued while an
// entry's fsync is pending runs after that fsync; when it failed, writing
// has ended (the page cache cannot be trusted) and the compaction must
// not copy the log into a new one.
func TestCompactAfterAFailedSyncWritesNothing(t *testing.T) {
	t.Parallel()
	ffs := &faultfs.FS{}
	c := openCache(t, filepath.Join(t.TempDir(), "cache.db"), nil, WithFS(ffs))
	defer c.Close()
	putN(t, c, 0, 3)
	durable, unhold := writtenNotSynced(t, c, ffs, "x", "answer")
	defer unhold()
	compacted := make(chan error, 1)
	taken := make(chan struct{})
	c.aloneTaken = func() { close(taken) }
	go func() {
		_, err := c.Compact()
		compacted <- err
	}()
	<-taken // the writer holds the compaction's work, and waits for the held fsync before it runs it
	ffs.SetFail(failSyncOf("cache.db"))
	unhold()
	if err := durable(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("durable() = %v; want EIO", err)
	}
	if err := <-compacted; err == nil {
		t.Error("Compact after a failed fsync = nil; want the failure")
	}
	if n := ffs.Count("open .cache.db.compact"); n != 0 {
		t.Errorf("the compaction opened its new log %d times after the fsync failed; want nothing written", n)
	}
}
