package review

import (
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
)

// holdSyncFS is the OS file system whose next file sync, once armed,
// waits: it says so on held and goes on when release is closed.
type holdSyncFS struct {
	fsys.FS
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func (h *holdSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (fsys.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return holdSyncFile{f, h}, nil
}

// Lock and Unlock lock the OS file under f.
func (h *holdSyncFS) Lock(f fsys.File) (bool, error) { return h.FS.Lock(f.(holdSyncFile).File) }
func (h *holdSyncFS) Unlock(f fsys.File) error       { return h.FS.Unlock(f.(holdSyncFile).File) }

type holdSyncFile struct {
	fsys.File
	h *holdSyncFS
}

func (f holdSyncFile) Sync() error {
	if f.h.armed.CompareAndSwap(true, false) {
		close(f.h.held)
		<-f.h.release
	}
	return f.File.Sync()
}

// sessionOn opens a session of alice on a demo run of n records, her log
// on fsy.
func sessionOn(t *testing.T, fsy fsys.FS, n int) *Session {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, n); err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.Context(), []string{run}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	l, err := OpenLogFS(fsy, LogPath(run, "alice"), "alice", c.Parts[0].Fingerprint, run, t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	s, err := NewSession(c, []*Log{l})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPagesReadWhileADecisionSyncs: while a decision is written and
// synced, a page reading the standing decisions (a view of the next
// record, the progress) is not held up, and sees the decision only once
// it is synced: a key's decision costs the reviewer one sync, not a wait
// behind it for every view.
func TestPagesReadWhileADecisionSyncs(t *testing.T) {
	t.Parallel()
	h := &holdSyncFS{FS: fsys.OS, held: make(chan struct{}), release: make(chan struct{})}
	s := sessionOn(t, h, 3)
	k := ItemKey{Record: "r01", Item: 1}
	h.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, _, err := s.DecideItem(t.Context(), "r01", k, ItemDecision{Action: ActionAccept}, t0)
		done <- err
	}()
	<-h.held // the decision is being synced
	if !s.mu.TryLock() {
		close(h.release)
		<-done
		t.Fatal("a page reading the standing decisions waits for a decision's sync")
	}
	reviewed, _ := s.Progress()
	_, stands := s.Decision(k)
	s.Unlock()
	close(h.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if reviewed != 0 || stands {
		t.Fatalf("before its sync the decision stands (%v) or counts (%d reviewed)", stands, reviewed)
	}
	s.Lock()
	reviewed, _ = s.Progress()
	_, stands = s.Decision(k)
	s.Unlock()
	if reviewed != 1 || !stands {
		t.Fatalf("after its sync: stands %v, %d reviewed; want it standing and counted", stands, reviewed)
	}
}

// TestProgressFollowsEveryDecision: the count of reviewed items the page
// shows, kept as decisions come, is the count of the log's standing
// decisions on items under review after every accept, reject, edit, undo,
// skip and flag, and after a restart on the log.
func TestProgressFollowsEveryDecision(t *testing.T) {
	t.Parallel()
	s := sessionOn(t, fsys.OS, 3)
	ctx := t.Context()
	check := func(step string) {
		t.Helper()
		s.Lock()
		got, _ := s.Progress()
		want, _ := Progress(s.c, s.states[0])
		s.Unlock()
		if got != want {
			t.Fatalf("after %s: progress %d; the log has %d", step, got, want)
		}
	}
	item := func(rec string, id int32) ItemKey { return ItemKey{Record: rec, Item: id} }
	var seqs []int64
	for _, d := range []struct {
		k ItemKey
		d ItemDecision
	}{
		{item("r01", 1), ItemDecision{Action: ActionAccept}},
		{item("r01", 2), ItemDecision{Action: ActionReject, Reason: "vague"}},
		{item("r01", 1), ItemDecision{Action: ActionReject}},
		{item("r00", 3), ItemDecision{Action: ActionAccept}},
	} {
		e, _, err := s.DecideItem(ctx, d.k.Record, d.k, d.d, t0)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
		check(d.d.Action + " of " + d.k.String())
	}
	if _, err := s.DecideRecord("r02", ActionFlag, "", t0); err != nil {
		t.Fatal(err)
	}
	check("a flag")
	if _, err := s.DecideRecord("r02", ActionSkip, "", t0); err != nil {
		t.Fatal(err)
	}
	check("a skip")
	for _, seq := range []int64{seqs[3], seqs[2], seqs[0]} {
		if _, _, err := s.Undo("r01", seq, t0); err != nil {
			t.Fatal(err)
		}
		check("an undo")
	}
	again, err := NewSession(s.c, s.logs)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := again.Progress(); a != 1 {
		t.Fatalf("after a restart on the log: progress %d; want 1 (r01 #2 rejected)", a)
	}
}
