package review

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)

func openTestLog(t *testing.T, path, reviewer, fp string) *Log {
	t.Helper()
	l, err := OpenLog(path, reviewer, fp, "runs/demo", t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func accept(rec string, item int32, text string) Entry {
	return Entry{Time: t0, Record: rec, Item: item, Action: ActionAccept, Before: &ItemState{Type: "SUGGEST", Text: text, Weight: 1}}
}

// TestLogSurvivesATornLastLine: a server killed while writing a line
// leaves it torn; the log opens with every whole line and the next
// decision follows them.
func TestLogSurvivesATornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review", "alice.jsonl")
	l := openTestLog(t, path, "alice", "fp1")
	for _, item := range []int32{1, 2} {
		if _, err := l.Append(accept("r1", item, "x")); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":3,"time":"2026-11-27T01:00:00Z","reviewer":"alice","record":"r1","it`)
	f.Close()

	if _, entries, err := ReadLog(path, "fp1"); err != nil || len(entries) != 2 {
		t.Fatalf("ReadLog of a torn log: %d entries, %v; want the 2 whole ones", len(entries), err)
	}
	l = openTestLog(t, path, "alice", "fp1")
	e, err := l.Append(accept("r1", 3, "x"))
	if err != nil || e.Seq != 3 {
		t.Fatalf("append after a torn line: seq %d, %v", e.Seq, err)
	}
	_, entries, err := ReadLog(path, "fp1")
	if err != nil || len(entries) != 3 || entries[2].Item != 3 {
		t.Fatalf("after the repair the log reads %+v, %v", entries, err)
	}
}

func TestLogRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "alice.jsonl")
	openTestLog(t, path, "alice", "fp1").Close()
	garbled := filepath.Join(dir, "bob.jsonl")
	os.WriteFile(garbled, []byte(`{"format":"rubricforge-review/1","corpus_fingerprint":"fp1","reviewer":"bob"}`+"\nnot json\n"), 0o644)
	tests := []struct {
		name, path, reviewer, fp string
		is                       error
		says                     string
	}{
		{"another corpus", path, "alice", "fp2", ErrOtherCorpus, "fingerprint fp1"},
		{"another reviewer's log", path, "bob", "fp1", nil, "is alice's review log, not bob's"},
		{"a bad name", filepath.Join(dir, "x.jsonl"), "../x", "fp1", nil, "a name is 1-64 letters"},
		{"a garbled line", garbled, "bob", "fp1", nil, "bob.jsonl:2: the entry does not decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := OpenLog(tt.path, tt.reviewer, tt.fp, "runs/demo", t0)
			if err == nil {
				l.Close()
				t.Fatal("opened")
			}
			if (tt.is != nil && !errors.Is(err, tt.is)) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("error %q; want one saying %q", err, tt.says)
			}
		})
	}
}

// TestLogIsHeldByOnePage: one reviewer cannot have two pages writing the
// same log; another reviewer's log opens beside it.
func TestLogIsHeldByOnePage(t *testing.T) {
	dir := t.TempDir()
	openTestLog(t, filepath.Join(dir, "alice.jsonl"), "alice", "fp")
	if _, err := OpenLog(filepath.Join(dir, "alice.jsonl"), "alice", "fp", "runs/demo", t0); !errors.Is(err, ErrLogInUse) {
		t.Fatalf("a second page on alice's log: %v; want ErrLogInUse", err)
	}
	openTestLog(t, filepath.Join(dir, "bob.jsonl"), "bob", "fp")
}

func TestReplayUndo(t *testing.T) {
	es := []Entry{
		{Seq: 1, Record: "r", Item: 1, Action: ActionAccept},
		{Seq: 2, Record: "r", Item: 1, Action: ActionReject},
		{Seq: 3, Record: "r", Action: ActionFlag},
		{Seq: 4, Action: ActionUndo, Undoes: 3},
		{Seq: 5, Action: ActionUndo, Undoes: 2},
		{Seq: 6, Record: "r", Item: 2, Action: ActionReject},
	}
	s := Replay("alice", es)
	if got := s.Items[ItemKey{Record: "r", Item: 1}].Action; got != ActionAccept {
		t.Errorf("item 1 after its reject was undone: %q, want accept", got)
	}
	if s.Flagged["r"] {
		t.Error("the undone flag still counts")
	}
	if s.LastStanding() != 6 {
		t.Errorf("the next undo takes back %d, want 6", s.LastStanding())
	}
	if s := Replay("alice", es[:5]); s.LastStanding() != 1 {
		t.Errorf("after two undos the next takes back %d, want 1", s.LastStanding())
	}
}

func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`{"format":"rubricforge-review/1","corpus_fingerprint":"a","reviewer":"x"}` + "\n" + `{"seq":1,"record":"r","item":1,"action":"accept"}` + "\n"))
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, entries, err := parseLog("fuzz", strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if h.Format != LogFormat {
			t.Fatalf("accepted header %+v", h)
		}
		for _, e := range entries {
			if checkEntry(e) != nil {
				t.Fatalf("accepted entry %+v", e)
			}
		}
	})
}

// TestDirIsNeverAmongShards: the logs of a run's shard or an export's data
// file live in the run's or the export's review directory.
func TestDirIsNeverAmongShards(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"run/manifest.json", "run/shards/part-00000.parquet", "exp/export.json", "exp/data/train-00000-of-00001.parquet", "loose/x.parquet"} {
		path := filepath.Join(root, f)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, nil, 0o644)
	}
	for in, want := range map[string]string{
		"run": "run/review", "run/shards/part-00000.parquet": "run/review",
		"exp/data/train-00000-of-00001.parquet": "exp/review", "loose/x.parquet": "loose/review",
	} {
		if got := Dir(filepath.Join(root, in)); got != filepath.Join(root, want) {
			t.Errorf("Dir(%s) = %s, want %s", in, got, filepath.Join(root, want))
		}
	}
}
