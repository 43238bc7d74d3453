package review

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
)

const crashLog = "/data/run/review/alice.jsonl"

// reviewScenario opens alice's log (making it and its directory) and
// appends decisions, then closes it; acked gets the items whose Append
// returned nil.
func reviewScenario(fsy fsys.FS, acked *[]int32) error {
	l, err := OpenLogFS(fsy, crashLog, "alice", "fp1", "/data/run", t0)
	if err != nil {
		return err
	}
	defer l.Close()
	for item := int32(1); item <= 4; item++ {
		if _, err := l.Append(accept("r1", item, "an item's text")); err != nil {
			return err
		}
		*acked = append(*acked, item)
	}
	return l.Close()
}

// TestLogCrashAtEveryOperation: a power cut at any operation of a review
// session, with unsynced bytes partly kept, loses no decision the page
// was told is in the log; the log opens again, and the next decision
// reads back after them.
func TestLogCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	newFS := func() *crashfs.FS {
		c := crashfs.New()
		if err := c.MkdirAll("/data/run", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := c.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		if err := c.SyncDir("/data"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	clean := newFS()
	setup := len(clean.Ops())
	var all []int32
	if err := reviewScenario(clean, &all); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20260701, 3))
	for _, op := range clean.Ops()[setup:] {
		if !op.Mutates() {
			continue
		}
		c := newFS()
		c.CrashAt(op.Index)
		var acked []int32
		if err := reviewScenario(c, &acked); !errors.Is(err, crashfs.ErrCrashed) {
			t.Fatalf("crash at %v: %v", op, err)
		}
		after := c.CrashClone(crashfs.CrashOptions{Tear: rng})
		l, err := OpenLogFS(after, crashLog, "alice", "fp1", "/data/run", t0)
		if err != nil {
			t.Fatalf("crash at %v: reopening: %v", op, err)
		}
		got := l.Entries()
		if len(got) < len(acked) {
			t.Fatalf("crash at %v: %d decisions in the log, %d acknowledged", op, len(got), len(acked))
		}
		for i, item := range acked {
			if got[i].Item != item {
				t.Fatalf("crash at %v: decision %d is on item %d, want %d", op, i+1, got[i].Item, item)
			}
		}
		e, err := l.Append(accept("r2", 1, "after the reboot"))
		if err != nil || e.Seq != int64(len(got)+1) {
			t.Fatalf("crash at %v: the decision after the reboot: seq %d, %v", op, e.Seq, err)
		}
		l.Close()
		_, entries, err := ReadLogFS(after, crashLog, "fp1")
		if err != nil || len(entries) != len(got)+1 || entries[len(entries)-1].Record != "r2" {
			t.Fatalf("crash at %v: the log reads %d entries, %v", op, len(entries), err)
		}
	}
}
