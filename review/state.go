package review

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ItemKey names an item of the corpus: a math rubric's item by its id, or
// a grounded record's criterion by its question and position.
type ItemKey struct {
	Record string
	// Question is a grounded criterion's question: its index + 1 (so that
	// the zero key names a math item); 0 for a math rubric's item.
	Question int32
	// Item is the item's id, or the criterion's position in its
	// question's criteria, from 1.
	Item int32
}

// Key is the item an entry names.
func (e Entry) Key() ItemKey {
	k := ItemKey{Record: e.Record, Item: e.Item}
	if e.Question != nil {
		k.Question = *e.Question + 1
	}
	return k
}

// question is the Entry.Question of k: nil for a math item.
func (k ItemKey) question() *int32 {
	if k.Question == 0 {
		return nil
	}
	q := k.Question - 1
	return &q
}

// String names the item for a person: "item #3 of record r01", or
// "criterion 2 of question 1 of record doc#0" (questions counted from 1).
func (k ItemKey) String() string {
	if k.Question > 0 {
		return fmt.Sprintf("criterion %d of question %d of record %s", k.Item, k.Question, k.Record)
	}
	return fmt.Sprintf("item #%d of record %s", k.Item, k.Record)
}

// ErrNoChange is wrapped when a decision would change nothing (a second
// flag, an edit that leaves the item as it is, a second accept): it is
// refused and nothing is logged.
var ErrNoChange = errors.New("nothing changed")

// ErrStale is wrapped when a decision was made on a view of an item older
// than the decision that stands on it now (another tab decided since).
var ErrStale = errors.New("the item changed since the page showed it")

// ErrCannotUndo is wrapped when an undo is refused.
var ErrCannotUndo = errors.New("cannot undo")

// State is one reviewer's standing decisions: the entries of a log with
// the undone ones taken out. Add folds in each new entry.
type State struct {
	Reviewer string
	// Items holds the standing accept, reject or edit of each item.
	Items map[ItemKey]Entry
	// Flagged and Skipped hold the records flagged or skipped.
	Flagged map[string]bool
	Skipped map[string]bool
	entries []Entry
	bySeq   map[int64]int // an entry's place in entries
	undone  map[int64]bool
	decided map[string]int // items with a standing decision, by record
}

// Replay folds entries (in log order) into the standing decisions.
func Replay(reviewer string, entries []Entry) *State {
	s := &State{Reviewer: reviewer, Items: map[ItemKey]Entry{}, Flagged: map[string]bool{}, Skipped: map[string]bool{},
		bySeq: map[int64]int{}, undone: map[int64]bool{}, decided: map[string]int{}}
	for _, e := range entries {
		s.Add(e)
	}
	return s
}

// Add folds in the entry the log took last.
func (s *State) Add(e Entry) {
	s.bySeq[e.Seq] = len(s.entries)
	s.entries = append(s.entries, e)
	if e.Action != ActionUndo {
		s.stand(e)
		return
	}
	if t, ok := s.entry(e.Undoes); ok && t.Action != ActionUndo && !s.undone[t.Seq] {
		s.undone[t.Seq] = true
		s.restand(t)
	}
}

// stand makes e what stands on its item or record.
func (s *State) stand(e Entry) {
	switch e.Action {
	case ActionFlag:
		s.Flagged[e.Record] = true
	case ActionUnflag:
		delete(s.Flagged, e.Record)
	case ActionSkip:
		s.Skipped[e.Record] = true
	default:
		k := e.Key()
		if _, had := s.Items[k]; !had {
			s.decided[e.Record]++
		}
		s.Items[k] = e
	}
}

// restand works out what stands on the item or record of t once t is
// undone: the latest of its other entries that still counts.
func (s *State) restand(t Entry) {
	last, ok := s.latest(t)
	switch t.Action {
	case ActionFlag, ActionUnflag:
		delete(s.Flagged, t.Record)
		if ok && last.Action == ActionFlag {
			s.Flagged[t.Record] = true
		}
	case ActionSkip:
		delete(s.Skipped, t.Record)
		if ok {
			s.Skipped[t.Record] = true
		}
	default:
		k := t.Key()
		if _, had := s.Items[k]; had {
			delete(s.Items, k)
			s.decided[t.Record]--
		}
		if ok {
			s.stand(last)
		}
	}
}

// sameTarget reports whether a and b are about the same thing: one item,
// a record's flag, or a record's skip.
func sameTarget(a, b Entry) bool {
	flagLike := func(x string) bool { return x == ActionFlag || x == ActionUnflag }
	switch {
	case itemActions[a.Action]:
		return itemActions[b.Action] && a.Key() == b.Key()
	case flagLike(a.Action):
		return flagLike(b.Action) && a.Record == b.Record
	case a.Action == ActionSkip:
		return b.Action == ActionSkip && a.Record == b.Record
	}
	return false
}

// latest is the last entry about t's target that still counts, t aside.
func (s *State) latest(t Entry) (Entry, bool) {
	for i := len(s.entries) - 1; i >= 0; i-- {
		e := s.entries[i]
		if e.Seq != t.Seq && e.Action != ActionUndo && !s.undone[e.Seq] && sameTarget(e, t) {
			return e, true
		}
	}
	return Entry{}, false
}

func (s *State) entry(seq int64) (Entry, bool) {
	i, ok := s.bySeq[seq]
	if !ok {
		return Entry{}, false
	}
	return s.entries[i], true
}

// Entries is the number of entries folded in.
func (s *State) Entries() int { return len(s.entries) }

// Flag is the standing flag of record id.
func (s *State) Flag(id string) (Entry, bool) {
	if !s.Flagged[id] {
		return Entry{}, false
	}
	for i := len(s.entries) - 1; i >= 0; i-- {
		if e := s.entries[i]; e.Action == ActionFlag && e.Record == id && !s.undone[e.Seq] {
			return e, true
		}
	}
	return Entry{}, false
}

// LastStanding is the seq of the latest entry that still counts; 0 when
// there is none.
func (s *State) LastStanding() int64 {
	for i := len(s.entries) - 1; i >= 0; i-- {
		if e := s.entries[i]; e.Action != ActionUndo && !s.undone[e.Seq] {
			return e.Seq
		}
	}
	return 0
}

// CheckUndo returns the entry seq names when an undo may take it back:
// it is a decision that still counts and no later decision about the same
// item (or the same record's flag or skip) stands over it. Otherwise the
// error (wrapping ErrCannotUndo) says why, for the reviewer.
func (s *State) CheckUndo(seq int64) (Entry, error) {
	e, ok := s.entry(seq)
	switch {
	case !ok:
		return Entry{}, fmt.Errorf("%w: there is no decision %d in the log", ErrCannotUndo, seq)
	case e.Action == ActionUndo:
		return Entry{}, fmt.Errorf("%w: an undo cannot be undone", ErrCannotUndo)
	case s.undone[seq]:
		return Entry{}, fmt.Errorf("%w: the %s was already undone", ErrCannotUndo, Describe(e))
	}
	if last, ok := s.latest(e); ok && last.Seq > e.Seq {
		return Entry{}, fmt.Errorf("%w: a later decision on %s stands (%s, at %s): undo that one first",
			ErrCannotUndo, targetName(e), last.Action, last.Time.Local().Format(time.TimeOnly))
	}
	return e, nil
}

// targetName names what e is about.
func targetName(e Entry) string {
	if itemActions[e.Action] {
		return e.Key().String()
	}
	return "record " + e.Record
}

// Describe says what e did, for the reviewer: `edit of item #3 of record
// r01 (to "new text")`, `flag of record r02`.
func Describe(e Entry) string {
	s := e.Action + " of " + targetName(e)
	switch {
	case e.Action == ActionEdit && e.After != nil:
		s += fmt.Sprintf(" (to %q)", cut(e.After.Text, 60))
	case e.Action == ActionUndo:
		s = fmt.Sprintf("undo of decision %d", e.Undoes)
	}
	return s
}

// cut shortens s to n runes with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
