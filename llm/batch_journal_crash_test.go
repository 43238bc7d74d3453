package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
)

// journalScenario is two waves of an offline batch run on fsy: requests
// deferred into a file, the file written for the user, its output
// imported (the batch ingested), then more requests into a second file.
// It stops at the first error.
func journalScenario(fsy fsys.FS, t *testing.T) error {
	b, err := NewBatcher(BatchOptions{Dir: "/run/batches", OfflineDir: "/run/files", PollInterval: time.Hour, FS: fsy},
		openTestCache(t), NewMeter(nil, Budget{}))
	if err != nil {
		return err
	}
	defer b.Close()
	api, err := NewBatchAPI(Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, Options{})
	if err != nil {
		return err
	}
	c, err := NewClient(Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, Options{Defer: b.Deferrer(api)}, openTestCache(t), NewMeter(nil, Budget{}))
	if err != nil {
		return err
	}
	b.Start(context.Background())
	wave := func(from, to int) error {
		for i := from; i < to; i++ {
			if _, err := c.Chat(context.Background(), simpleRequest(fmt.Sprintf("question %d", i))); ClassOf(err) != ClassDeferred {
				return fmt.Errorf("question %d: %w", i, err)
			}
		}
		return b.Flush(context.Background())
	}
	if err := wave(0, 3); err != nil {
		return err
	}
	for _, s := range b.Offline() {
		if err := answerOfflineFS(fsy, b, s.Local); err != nil {
			return err
		}
	}
	b.importOffline()
	if err := b.fatal; err != nil {
		return err
	}
	if err := wave(3, 5); err != nil {
		return err
	}
	return b.Close()
}

// answerOfflineFS writes the output file of an offline batch, answering
// every row.
func answerOfflineFS(fsy fsys.FS, b *Batcher, local string) error {
	in, err := fsy.OpenFile(b.OfflineInput(local), os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	var out strings.Builder
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var l batchInputLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return err
		}
		out.WriteString(outputLine(l.CustomID, 200, string(okBody(1))) + "\n")
	}
	return fsys.WriteFileAtomic(fsy, b.OfflineOutput(local), []byte(out.String()), 0o644)
}

// TestBatchJournalCrashAtEveryOperation: a power cut at any operation of
// two offline waves (a cover of them by default, every one under make
// test-long), with unsynced bytes partly kept, leaves a journal
// that the next Batcher opens (a torn tail cut off), whose states name
// only files that are there, and whose next state reads back on a line of
// its own.
func TestBatchJournalCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	newFS := func() *crashfs.FS {
		c := crashfs.New()
		if err := c.MkdirAll("/run", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := c.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	clean := newFS()
	setup := len(clean.Ops())
	if err := journalScenario(clean, t); err != nil {
		t.Fatal(err)
	}
	var ops []crashfs.Op
	for _, op := range clean.Ops()[setup:] {
		if op.Mutates() && strings.HasPrefix(op.Path, "/run/batches") {
			ops = append(ops, op)
		}
	}
	// A cover by default: the first point of each kind of operation,
	// every third point and the last; every point under make test-long.
	every := longtest.Pick(t, 3, 1)
	seen := map[crashfs.Kind]bool{}
	rng := rand.New(rand.NewPCG(20260701, 9))
	points := 0
	for n, op := range ops {
		first := !seen[op.Kind]
		seen[op.Kind] = true
		if !first && n%every != 0 && n != len(ops)-1 {
			continue
		}
		points++
		c := newFS()
		c.CrashAt(op.Index)
		if err := journalScenario(c, t); err == nil {
			continue // this run's operations came in another order and ended before the point
		}
		after := c.CrashClone(crashfs.CrashOptions{Tear: rng})
		b, err := NewBatcher(BatchOptions{Dir: "/run/batches", OfflineDir: "/run/files", PollInterval: time.Hour, FS: after},
			openTestCache(t), NewMeter(nil, Budget{}))
		if err != nil {
			t.Fatalf("crash at %v: the next session: %v", op, err)
		}
		for _, s := range b.States() {
			if (s.Phase == PhaseWritten || s.Phase == PhaseOffline) && !b.fileComplete(s.Local) {
				t.Errorf("crash at %v: batch %s is %s but its files are gone", op, s.Local, s.Phase)
			}
		}
		n := len(b.States())
		b.mu.Lock()
		err = b.jr.append(&BatchState{Local: "b999999", Phase: PhaseDropped, Stages: map[string]int{}})
		b.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		states, err := ReadBatchStatesFS(after, "/run/batches")
		if err != nil || len(states) != n+1 || states[n].Local != "b999999" {
			t.Fatalf("crash at %v: after one more state the journal reads %d states, %v", op, len(states), err)
		}
		if _, err := after.Stat("/run/batches/" + BatchJournal); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d crash points", points, len(ops))
}
