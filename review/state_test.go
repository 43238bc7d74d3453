package review

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFlagTwiceIsOneFlag: a flag on a flagged record changes nothing and
// is refused (not logged); an unflag takes the flag away, and undoing the
// unflag puts it back.
func TestFlagTwiceIsOneFlag(t *testing.T) {
	s := Replay("alice", nil)
	add := func(e Entry) Entry {
		t.Helper()
		e.Seq = int64(len(s.entries) + 1)
		s.Add(e)
		return e
	}
	e, err := s.RecordEntry("r01", ActionFlag, "ask bob", t0)
	if err != nil {
		t.Fatal(err)
	}
	add(e)
	if _, err := s.RecordEntry("r01", ActionFlag, "", t0); !errors.Is(err, ErrNoChange) || !strings.Contains(err.Error(), "already flagged") {
		t.Fatalf("a second flag: %v; want ErrNoChange saying it is already flagged", err)
	}
	if fl, ok := s.Flag("r01"); !ok || fl.Reason != "ask bob" {
		t.Fatalf("the standing flag: %+v, %v", fl, ok)
	}
	e, err = s.RecordEntry("r01", ActionUnflag, "", t0)
	if err != nil {
		t.Fatal(err)
	}
	unflag := add(e)
	if s.Flagged["r01"] {
		t.Fatal("still flagged after the unflag")
	}
	if _, err := s.RecordEntry("r01", ActionUnflag, "", t0); !errors.Is(err, ErrNoChange) {
		t.Fatalf("an unflag of a record not flagged: %v", err)
	}
	if _, err := s.CheckUndo(unflag.Seq); err != nil {
		t.Fatal(err)
	}
	add(Entry{Time: t0, Action: ActionUndo, Undoes: unflag.Seq})
	if !s.Flagged["r01"] {
		t.Fatal("undoing the unflag did not bring the flag back")
	}
}

// TestUndoNamesWhatItUndoes: an undo names a decision; one with a later
// standing decision on the same item, an undone one and an undo are
// refused with a reason; undoing a decision brings back the one before it.
func TestUndoNamesWhatItUndoes(t *testing.T) {
	es := []Entry{
		{Seq: 1, Record: "r01", Item: 3, Action: ActionAccept},
		{Seq: 2, Record: "r01", Item: 3, Action: ActionEdit, After: &ItemState{"SUGGEST", "new", 1}},
		{Seq: 3, Record: "r02", Item: 1, Action: ActionReject, Reason: "vague"},
		{Seq: 4, Action: ActionUndo, Undoes: 3},
		{Seq: 5, Record: "r02", Action: ActionSkip},
	}
	s := Replay("alice", es)
	for _, tt := range []struct {
		seq  int64
		says string
	}{
		{1, "a later decision on item #3 of record r01 stands (edit"},
		{3, "already undone"},
		{4, "an undo cannot be undone"},
		{9, "no decision 9"},
	} {
		if _, err := s.CheckUndo(tt.seq); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("undo of %d: %v; want it refused saying %q", tt.seq, err, tt.says)
		}
	}
	e, err := s.CheckUndo(2)
	if err != nil {
		t.Fatal(err)
	}
	if got := Describe(e); got != `edit of item #3 of record r01 (to "new")` {
		t.Errorf("Describe = %q", got)
	}
	s.Add(Entry{Seq: 6, Action: ActionUndo, Undoes: 2})
	if got := s.Items[ItemKey{Record: "r01", Item: 3}].Action; got != ActionAccept {
		t.Fatalf("after the edit was undone item 3 stands as %q; want the accept before it", got)
	}
	if got := Describe(Entry{Record: "p#0", Question: ptr32(1), Item: 2, Action: ActionReject}); got != "reject of criterion 2 of question 2 of record p#0" {
		t.Errorf("Describe of a criterion = %q", got)
	}
	if got := Describe(Entry{Record: "r02", Action: ActionSkip}); got != "skip of record r02" {
		t.Errorf("Describe of a skip = %q", got)
	}
}

func ptr32(v int32) *int32 { return &v }

// TestEditThatChangesNothingIsRefused: an edit that leaves the item as
// the corpus has it, or as the reviewer's standing edit has it, and a
// second accept are refused (ErrNoChange) and would log nothing; an edit
// of the weight alone is taken.
func TestEditThatChangesNothingIsRefused(t *testing.T) {
	c := loadDemo(t, 1)
	rec, err := c.Record(t.Context(), "r00")
	if err != nil {
		t.Fatal(err)
	}
	it := rec.Items[0]
	orig := ItemState{Type: it.Type, Text: it.Text, Weight: it.Weight}
	s := Replay("alice", nil)
	if _, err := s.ItemEntry(rec, it.Key, ItemDecision{Action: ActionEdit, After: &orig}, t0); !errors.Is(err, ErrNoChange) ||
		!strings.Contains(err.Error(), "the item as the corpus has it") {
		t.Fatalf("an edit to the corpus's own text: %v", err)
	}
	spaced := orig
	spaced.Text = "  " + orig.Text + " "
	if _, err := s.ItemEntry(rec, it.Key, ItemDecision{Action: ActionEdit, After: &spaced}, t0); !errors.Is(err, ErrNoChange) {
		t.Fatalf("an edit that only adds spaces: %v", err)
	}
	heavier := orig
	heavier.Weight = 2
	e, err := s.ItemEntry(rec, it.Key, ItemDecision{Action: ActionEdit, After: &heavier}, t0)
	if err != nil {
		t.Fatalf("an edit of the weight alone: %v", err)
	}
	e.Seq = 1
	s.Add(e)
	if _, err := s.ItemEntry(rec, it.Key, ItemDecision{Action: ActionEdit, After: &heavier}, t0); !errors.Is(err, ErrNoChange) ||
		!strings.Contains(err.Error(), "what the item says now") {
		t.Fatalf("the same edit again: %v", err)
	}
	a, err := s.ItemEntry(rec, rec.Items[1].Key, ItemDecision{Action: ActionAccept}, t0)
	if err != nil {
		t.Fatal(err)
	}
	a.Seq = 2
	s.Add(a)
	if _, err := s.ItemEntry(rec, rec.Items[1].Key, ItemDecision{Action: ActionAccept}, t0); !errors.Is(err, ErrNoChange) {
		t.Fatalf("a second accept: %v", err)
	}
}

// TestStaleView: a decision made on a view of the item older than what
// stands (another tab decided since) is refused, naming what stands.
func TestStaleView(t *testing.T) {
	c := loadDemo(t, 1)
	rec, _ := c.Record(t.Context(), "r00")
	s := Replay("alice", nil)
	e, _ := s.ItemEntry(rec, rec.Items[0].Key, ItemDecision{Action: ActionAccept}, t0)
	e.Seq = 1
	s.Add(e)
	seen := int64(0)
	_, err := s.ItemEntry(rec, rec.Items[0].Key, ItemDecision{Action: ActionReject, Seen: &seen}, t0.Add(time.Second))
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "accept") {
		t.Fatalf("a reject made on a view without the accept: %v; want ErrStale naming the accept", err)
	}
	seen = 1
	if _, err := s.ItemEntry(rec, rec.Items[0].Key, ItemDecision{Action: ActionReject, Seen: &seen}, t0); err != nil {
		t.Fatalf("a reject made on the current view: %v", err)
	}
}
