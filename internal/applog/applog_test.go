package applog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
)

// lines collects the lines a read passes.
func collect(dst *[]string) func(Line) error {
	return func(l Line) error {
		*dst = append(*dst, string(l.Data))
		return nil
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in     string
		lines        []string
		end, torn    int64
		unterminated bool
	}{
		{name: "empty"},
		{name: "two lines", in: "{\"a\":1}\n{\"b\":2}\n", lines: []string{`{"a":1}`, `{"b":2}`}, end: 16},
		{name: "blank lines count in offsets", in: "\n{\"a\":1}\n\n", lines: []string{`{"a":1}`}, end: 10},
		{name: "crlf", in: "{\"a\":1}\r\n", lines: []string{`{"a":1}`}, end: 9},
		{name: "torn", in: "{\"a\":1}\n{\"b\":", lines: []string{`{"a":1}`}, end: 8, torn: 5},
		{name: "whole value without its newline", in: "{\"a\":1}\n{\"b\":2}", lines: []string{`{"a":1}`, `{"b":2}`}, end: 15, unterminated: true},
		{name: "spaces without a newline are torn", in: "{\"a\":1}\n  ", lines: []string{`{"a":1}`}, end: 8, torn: 2},
		{name: "a bad middle line is the caller's", in: "{\"a\":1}\nnope\n", lines: []string{`{"a":1}`, "nope"}, end: 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			tail, err := Parse(strings.NewReader(tc.in), collect(&got))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tc.lines, "|") || tail.End != tc.end || tail.Torn != tc.torn ||
				tail.Unterminated != tc.unterminated || tail.Lines != len(tc.lines) {
				t.Errorf("got %q %+v; want %q end %d torn %d unterminated %v", got, tail, tc.lines, tc.end, tc.torn, tc.unterminated)
			}
		})
	}
}

func TestParseStopsOnTheCallersError(t *testing.T) {
	t.Parallel()
	stop := errors.New("not a state")
	n := 0
	_, err := Parse(strings.NewReader("1\n2\n3\n"), func(l Line) error {
		n++
		if l.No == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("Parse = %v after %d lines; want the caller's error after 2", err, n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "{}\n", "{}\n{", "{}", "\n\n", "1\n2", "[1,\n", "{\"a\":\"\\n\"}\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var lines []string
		tail, err := Parse(bytes.NewReader(data), collect(&lines))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		switch {
		case tail.Unterminated && (tail.Torn != 0 || tail.End != int64(len(data))):
			t.Fatalf("unterminated, but end %d torn %d of %d bytes", tail.End, tail.Torn, len(data))
		case !tail.Unterminated && tail.End+tail.Torn != int64(len(data)):
			t.Fatalf("end %d + torn %d != %d bytes", tail.End, tail.Torn, len(data))
		}
		// What Open keeps reads back whole, with the same lines.
		kept := data[:tail.End]
		if tail.Unterminated {
			kept = append(append([]byte(nil), kept...), '\n')
		}
		var again []string
		t2, err := Parse(bytes.NewReader(kept), collect(&again))
		if err != nil || t2.Torn != 0 || t2.Unterminated || strings.Join(again, "\x00") != strings.Join(lines, "\x00") {
			t.Fatalf("the kept prefix reads as %q %+v %v; the whole as %q", again, t2, err, lines)
		}
	})
}

func newFS(t *testing.T) *crashfs.FS {
	t.Helper()
	c := crashfs.New()
	if err := c.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return c
}

func readAll(t *testing.T, fsy fsys.FS, path string) ([]string, Tail) {
	t.Helper()
	var got []string
	tail, err := Read(fsy, path, collect(&got))
	if err != nil {
		t.Fatal(err)
	}
	return got, tail
}

// TestOpenCutsATornTailAndTheNextLineStandsAlone: a torn last line is cut
// off when the log opens for writing, so the next line is never glued to
// it and every line reads back whole; a whole value without its newline
// gets one.
func TestOpenCutsATornTailAndTheNextLineStandsAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, before string
		want         []string
		torn         int64
	}{
		{"torn", "{\"n\":1}\n{\"n\":2,\"pha", []string{`{"n":1}`, `{"n":3}`}, 11},
		{"unterminated", "{\"n\":1}\n{\"n\":2}", []string{`{"n":1}`, `{"n":2}`, `{"n":3}`}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFS(t)
			if err := fsys.WriteFileAtomic(c, "/d/log.jsonl", []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
			l, tail, err := Open("/d/log.jsonl", Options{FS: c}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tail.Torn != tc.torn {
				t.Errorf("Open reports %d torn bytes, want %d", tail.Torn, tc.torn)
			}
			if _, err := l.AppendJSON(map[string]int{"n": 3}); err != nil {
				t.Fatal(err)
			}
			l.Close()
			got, after := readAll(t, c.CrashClone(crashfs.CrashOptions{}), "/d/log.jsonl")
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || after.Torn != 0 || after.Unterminated {
				t.Errorf("after a power cut the log reads %q %+v, want %q", got, after, tc.want)
			}
		})
	}
}

// TestReadChangesNothing: a reader skips a torn tail and leaves it.
func TestReadChangesNothing(t *testing.T) {
	t.Parallel()
	c := newFS(t)
	if err := fsys.WriteFileAtomic(c, "/d/log.jsonl", []byte("{}\n{\"x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, tail := readAll(t, c, "/d/log.jsonl")
	if len(got) != 1 || tail.Torn != 3 {
		t.Errorf("Read: %q %+v", got, tail)
	}
	if b, _ := c.Contents("/d/log.jsonl"); string(b) != "{}\n{\"x" {
		t.Errorf("Read changed the file: %q", b)
	}
	if _, err := Read(c, "/d/missing.jsonl", collect(&got)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing log: %v", err)
	}
}

// TestAFailedWriteIsCutBack: a write that fails half-way (a full disk)
// leaves the log as it was, and the next line goes where it would have.
func TestAFailedWriteIsCutBack(t *testing.T) {
	t.Parallel()
	c := newFS(t)
	l, _, err := Open("/d/log.jsonl", Options{FS: c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.AppendJSON(1); err != nil {
		t.Fatal(err)
	}
	c.FailWhen(func(op crashfs.Op) bool { return op.Kind == crashfs.OpWrite }, syscall.ENOSPC)
	if _, err := l.AppendJSON("a long line that does not fit"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	c.ClearFaults()
	if off, err := l.AppendJSON(2); err != nil || off != 2 {
		t.Fatalf("append after the disk has room: off %d, %v; want 2", off, err)
	}
	if got, _ := readAll(t, c, "/d/log.jsonl"); strings.Join(got, "|") != "1|2" {
		t.Errorf("the log reads %q", got)
	}
}

// TestAFailedSyncBreaksTheLog: after a failed fsync nothing more is
// appended, and the errors say why.
func TestAFailedSyncBreaksTheLog(t *testing.T) {
	t.Parallel()
	c := newFS(t)
	l, _, err := Open("/d/log.jsonl", Options{FS: c, Create: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c.FailWhen(func(op crashfs.Op) bool { return op.Kind == crashfs.OpSync }, syscall.EIO)
	if _, err := l.AppendJSON(1); !errors.Is(err, fsys.ErrNotDurable) || !errors.Is(err, ErrBroken) {
		t.Fatalf("a failed sync: %v", err)
	}
	c.ClearFaults()
	if _, err := l.AppendJSON(2); !errors.Is(err, ErrBroken) || !errors.Is(err, syscall.EIO) {
		t.Errorf("append after a failed sync: %v; want ErrBroken naming the sync's error", err)
	}
}

// TestLockIsExclusive: a second writer of a locked log is refused until
// the first closes it.
func TestLockIsExclusive(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "alice.jsonl")
	a, _, err := Open(path, Options{Lock: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(path, Options{Lock: true}, nil); !errors.Is(err, ErrLocked) {
		t.Errorf("a second writer: %v; want ErrLocked", err)
	}
	if err := a.Rewrite(nil); err == nil {
		t.Error("a locked log was rewritten")
	}
	a.Close()
	b, _, err := Open(path, Options{Lock: true}, nil)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	b.Close()
}

// TestRewriteRenamesBetweenSyncs: a compaction's rename is between two
// syncs of the directory.
func TestRewriteRenamesBetweenSyncs(t *testing.T) {
	t.Parallel()
	c := newFS(t)
	l, _, err := Open("/d/log.jsonl", Options{FS: c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		if _, err := l.AppendJSON(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Rewrite([]byte("2\n")); err != nil {
		t.Fatal(err)
	}
	if off, err := l.AppendJSON(3); err != nil || off != 2 {
		t.Fatalf("append after rewrite: %d %v", off, err)
	}
	if bad := crashfs.UnsyncedRenames(c.Ops()); len(bad) > 0 {
		t.Errorf("renames without directory syncs around them: %v", bad)
	}
	if got, _ := readAll(t, c, "/d/log.jsonl"); strings.Join(got, "|") != "2|3" {
		t.Errorf("the log reads %q", got)
	}
}

// logScenario writes a log the way its owners do: created by the first
// append, single and grouped lines, a compaction, more lines. acked gets
// the lines the log holds by what the calls returned (the lines of a
// compaction replace it when it returns).
func logScenario(fsy fsys.FS, acked *[]string) error {
	l, _, err := Open("/d/log.jsonl", Options{FS: fsy}, nil)
	if err != nil {
		return err
	}
	defer l.Close()
	add := func(lines ...string) error {
		var b []byte
		for _, s := range lines {
			b = append(append(b, s...), '\n')
		}
		if _, err := l.Append(b); err != nil {
			return err
		}
		*acked = append(*acked, lines...)
		return nil
	}
	for i := range 4 {
		if err := add(fmt.Sprintf(`{"seq":%d,"pad":"%s"}`, i, strings.Repeat("x", 40*i))); err != nil {
			return err
		}
	}
	if err := add(`{"seq":4}`, `{"seq":5}`, `{"seq":6}`); err != nil {
		return err
	}
	kept := []string{`{"seq":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, `{"seq":6}`}
	if err := l.Rewrite([]byte(strings.Join(kept, "\n") + "\n")); err != nil {
		return err
	}
	*acked = append([]string(nil), kept...)
	for i := 7; i < 9; i++ {
		if err := add(fmt.Sprintf(`{"seq":%d}`, i)); err != nil {
			return err
		}
	}
	return nil
}

// TestCrashAtEveryOperation crashes the scenario at every operation that
// changes the disk and reboots, keeping a random part of what was written
// but not synced: the reopened log holds every line an append returned
// for, in order, then at most lines that were being written, each whole;
// and the next append reads back as a line of its own.
func TestCrashAtEveryOperation(t *testing.T) {
	t.Parallel()
	clean := newFS(t)
	var all []string
	if err := logScenario(clean, &all); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20260701, 1))
	points := 0
	for _, op := range clean.Ops() {
		if !op.Mutates() {
			continue
		}
		points++
		c := newFS(t)
		c.CrashAt(op.Index)
		var acked []string
		if err := logScenario(c, &acked); !errors.Is(err, crashfs.ErrCrashed) {
			t.Fatalf("crash at %v: the scenario ended with %v", op, err)
		}
		after := c.CrashClone(crashfs.CrashOptions{Tear: rng})
		var got []string
		l, _, err := Open("/d/log.jsonl", Options{FS: after}, collect(&got))
		if err != nil {
			t.Fatalf("crash at %v: reopening: %v", op, err)
		}
		if len(got) < len(acked) || strings.Join(got[:len(acked)], "|") != strings.Join(acked, "|") {
			t.Fatalf("crash at %v: the log holds %q; the appends that returned wrote %q", op, got, acked)
		}
		for _, s := range got {
			if !json.Valid([]byte(s)) {
				t.Fatalf("crash at %v: a line that was never written: %q", op, s)
			}
		}
		if _, err := l.AppendJSON(map[string]string{"after": "reboot"}); err != nil {
			t.Fatalf("crash at %v: append after the reboot: %v", op, err)
		}
		l.Close()
		again, tail := readAll(t, after, "/d/log.jsonl")
		if len(again) != len(got)+1 || again[len(again)-1] != `{"after":"reboot"}` || tail.Torn != 0 {
			t.Fatalf("crash at %v: after one more append the log reads %q %+v", op, again, tail)
		}
	}
	t.Logf("%d crash points", points)
}
