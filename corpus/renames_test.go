package corpus

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
)

// TestRunRenamesAreSynced: every rename the crash scenario makes (shards
// committed and compacted, id lists, the manifest, the failures log's
// compaction) is between syncs of its directories.
func TestRunRenamesAreSynced(t *testing.T) {
	t.Parallel()
	if bad := crashfs.UnsyncedRenames(cleanRun(t)); len(bad) > 0 {
		t.Errorf("renames without a directory sync before and after: %v", bad)
	}
}

// failuresScenario records failures one at a time and several at once,
// supersedes one (so that Close compacts the log) and closes. acked holds
// the ids whose failure a call returned nil for.
func failuresScenario(fsy fsys.FS, acked map[string]bool) error {
	r, err := Open(crashDir, Options{FS: fsy, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer r.Close()
	one := func(id, reason string) error {
		if err := r.RecordFailure(Failure{ID: id, Stage: "distill", Reason: reason}); err != nil {
			return err
		}
		acked[id] = true
		return nil
	}
	if err := one("a", "timeout"); err != nil {
		return err
	}
	if err := one("b", strings.Repeat("a long reason ", 20)); err != nil {
		return err
	}
	group := []Failure{{ID: "c", Stage: "judge", Reason: "x"}, {ID: "d", Stage: "judge", Reason: "y"}}
	if err := r.RecordFailures(group); err != nil {
		return err
	}
	acked["c"], acked["d"] = true, true
	if err := one("a", "failed again"); err != nil {
		return err
	}
	return r.Close()
}

// TestFailuresLogCrashAtEveryOperation: a crash at any operation of the
// failures log (appends, a group append, the compaction at Close), with
// unsynced bytes partly kept, loses no failure a call returned nil for;
// and the failure recorded after the reboot reads back as a line of its
// own, with no bad line in the log.
func TestFailuresLogCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	clean := newCrashFS(t)
	setup := len(clean.Ops())
	if err := failuresScenario(clean, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(*crashSeed, 5))
	for _, op := range clean.Ops()[setup:] {
		if !op.Mutates() {
			continue
		}
		c := newCrashFS(t)
		c.CrashAt(op.Index)
		acked := map[string]bool{}
		if err := failuresScenario(c, acked); !errors.Is(err, crashfs.ErrCrashed) {
			t.Fatalf("crash at %v: %v", op, err)
		}
		after := c.CrashClone(crashfs.CrashOptions{Tear: rng})
		logs := &logCounter{}
		r, err := Open(crashDir, Options{FS: after, Logger: slog.New(logs)})
		if err != nil {
			t.Fatalf("crash at %v: reopening: %v", op, err)
		}
		got := r.Failures()
		for id := range acked {
			if _, ok := got[id]; !ok {
				t.Errorf("crash at %v: the acknowledged failure of %s is lost", op, id)
			}
		}
		if err := r.RecordFailure(Failure{ID: "z", Stage: "verify", Reason: "after the reboot"}); err != nil {
			t.Fatalf("crash at %v: %v", op, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if logs.count("skipped bad lines") > 0 {
			t.Errorf("crash at %v: the log had bad lines", op)
		}
		fails, err := ReadFailuresFS(after, crashDir)
		if err != nil || len(fails) != len(got)+1 || fails[len(fails)-1].Reason != "after the reboot" {
			t.Errorf("crash at %v: after one more failure the log reads %+v, %v", op, fails, err)
		}
	}
}
