package review

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Standing is what a queue reads of a reviewer's decisions.
type Standing interface {
	IsFlagged(id string) bool         // record id (its name in the queue) is flagged
	IsSkipped(id string) bool         // record id was skipped
	FlaggedRecords() []string         // the records flagged
	SkippedRecords() []string         // the records skipped
	DecidedIn(record string) int      // items of record (as item keys name it) with a standing decision
	Decision(k ItemKey) (Entry, bool) // the standing decision on item k
	Flag(id string) (Entry, bool)     // the standing flag of record id
}

// IsFlagged reports whether record id is flagged.
func (s *State) IsFlagged(id string) bool { return s.Flagged[id] }

// IsSkipped reports whether record id was skipped.
func (s *State) IsSkipped(id string) bool { return s.Skipped[id] }

// DecidedIn counts the items of record id with a standing decision.
func (s *State) DecidedIn(id string) int { return s.decided[id] }

// FlaggedRecords lists the records flagged.
func (s *State) FlaggedRecords() []string { return slices.Collect(maps.Keys(s.Flagged)) }

// SkippedRecords lists the records skipped.
func (s *State) SkippedRecords() []string { return slices.Collect(maps.Keys(s.Skipped)) }

// Decision is the standing decision on item k.
func (s *State) Decision(k ItemKey) (Entry, bool) {
	e, ok := s.Items[k]
	return e, ok
}

// Session is one reviewer's review of a corpus on a page: a log and the
// standing decisions of each of the corpus's parts, each decision checked
// against what stands, written to its part's log and synced before it
// counts. Safe for concurrent use: decisions are taken one at a time
// (decide), and a page reading the standing decisions (Lock) waits only
// while one is folded in, never while it is written and synced: until
// then the decision does not stand.
type Session struct {
	c      *Corpus
	logs   []*Log
	states []*State
	decide sync.Mutex // held by a decision from its check to its fold
	mu     sync.Mutex // held while states change or are read
	// reviewed counts the items under review with a standing decision,
	// kept as decisions are folded in (Progress).
	reviewed int
}

// NewSession starts the reviewer's session over c with one log per part
// (in c.Parts order), replaying what they hold.
func NewSession(c *Corpus, logs []*Log) (*Session, error) {
	if len(logs) != len(c.Parts) || len(logs) == 0 {
		return nil, fmt.Errorf("review: %d logs for %d corpora", len(logs), len(c.Parts))
	}
	s := &Session{c: c, logs: logs}
	for _, l := range logs {
		st := Replay(l.Header().Reviewer, l.Entries())
		s.states = append(s.states, st)
		r, _ := Progress(c, st)
		s.reviewed += r
	}
	return s, nil
}

// Corpus is the corpus under review.
func (s *Session) Corpus() *Corpus { return s.c }

// Reviewer is the reviewer's name.
func (s *Session) Reviewer() string { return s.logs[0].Header().Reviewer }

// Logs are the session's logs, one per part.
func (s *Session) Logs() []*Log { return s.logs }

// state is the state of the part record id (its name in the queue) is in.
func (s *Session) state(id string) (*State, *Log, error) {
	p := s.c.PartOf(id)
	if p < 0 {
		return nil, nil, fmt.Errorf("no record %q in this review: %w", id, ErrNoRecord)
	}
	return s.states[p], s.logs[p], nil
}

// ErrNoRecord is wrapped when a decision names a record not under review.
var ErrNoRecord = errors.New("no such record")

// stateOfKey is the state of the part holding item k.
func (s *Session) stateOfKey(k ItemKey) *State {
	if r := s.c.unitOf(k); r != nil {
		return s.states[r.part]
	}
	return nil
}

// IsFlagged implements Standing.
func (s *Session) IsFlagged(id string) bool {
	st, _, err := s.state(id)
	return err == nil && st.IsFlagged(id)
}

// IsSkipped implements Standing.
func (s *Session) IsSkipped(id string) bool {
	st, _, err := s.state(id)
	return err == nil && st.IsSkipped(id)
}

// FlaggedRecords implements Standing.
func (s *Session) FlaggedRecords() []string {
	var out []string
	for _, st := range s.states {
		out = append(out, st.FlaggedRecords()...)
	}
	return out
}

// SkippedRecords implements Standing.
func (s *Session) SkippedRecords() []string {
	var out []string
	for _, st := range s.states {
		out = append(out, st.SkippedRecords()...)
	}
	return out
}

// DecidedIn implements Standing.
func (s *Session) DecidedIn(record string) int {
	n := 0
	for _, st := range s.states {
		n += st.DecidedIn(record)
	}
	return n
}

// Decision implements Standing.
func (s *Session) Decision(k ItemKey) (Entry, bool) {
	if st := s.stateOfKey(k); st != nil {
		return st.Decision(k)
	}
	return Entry{}, false
}

// Flag is the standing flag of record id.
func (s *Session) Flag(id string) (Entry, bool) {
	st, _, err := s.state(id)
	if err != nil {
		return Entry{}, false
	}
	return st.Flag(id)
}

// Lock and Unlock hold the session still while a page reads it whole.
func (s *Session) Lock()   { s.mu.Lock() }
func (s *Session) Unlock() { s.mu.Unlock() }

// Queue is the queue under f. Hold the session (Lock) while reading it.
func (s *Session) Queue(f Filter) *Queue { return s.c.Queue(f, s) }

// Progress counts the items decided, of all under review. Hold the
// session (Lock) while reading it.
func (s *Session) Progress() (reviewed, total int) { return s.reviewed, s.c.Items() }

// DecideItem checks decision d on item k of record id (its name in the
// queue) against what stands, logs it and returns the entry and the
// record (ErrNoChange, ErrStale, ErrInvalidEdit, ErrNoRecord otherwise).
func (s *Session) DecideItem(ctx context.Context, id string, k ItemKey, d ItemDecision, now time.Time) (Entry, *Record, error) {
	rec, err := s.record(ctx, id)
	if err != nil {
		return Entry{}, nil, err
	}
	s.decide.Lock()
	defer s.decide.Unlock()
	st, l, err := s.state(id)
	if err != nil {
		return Entry{}, nil, err
	}
	s.mu.Lock()
	e, err := st.ItemEntry(rec, k, d, now)
	s.mu.Unlock()
	if err != nil {
		return Entry{}, rec, err
	}
	e, err = s.append(st, l, e)
	return e, rec, err
}

// DecideRecord logs a skip, flag or unflag of record id.
func (s *Session) DecideRecord(id, action, reason string, now time.Time) (Entry, error) {
	s.decide.Lock()
	defer s.decide.Unlock()
	st, l, err := s.state(id)
	if err != nil {
		return Entry{}, err
	}
	s.mu.Lock()
	e, err := st.RecordEntry(id, action, reason, now)
	s.mu.Unlock()
	if err != nil {
		return Entry{}, err
	}
	return s.append(st, l, e)
}

// Undo logs the undo of decision seq of record id's log, when it may be
// undone (State.CheckUndo), and returns the undo and what it undid.
func (s *Session) Undo(id string, seq int64, now time.Time) (undo, undone Entry, err error) {
	s.decide.Lock()
	defer s.decide.Unlock()
	st, l, err := s.state(id)
	if err != nil {
		return Entry{}, Entry{}, err
	}
	s.mu.Lock()
	undone, err = st.CheckUndo(seq)
	s.mu.Unlock()
	if err != nil {
		return Entry{}, Entry{}, err
	}
	undo, err = s.append(st, l, Entry{Time: now, Action: ActionUndo, Undoes: seq})
	return undo, undone, err
}

// append writes e to l and syncs it (the caller holds decide, not mu:
// pages go on reading meanwhile), then folds it into st.
func (s *Session) append(st *State, l *Log, e Entry) (Entry, error) {
	saved, err := l.Append(e)
	if err != nil {
		return Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.itemOf(st, saved)
	before := ok && s.stands(st, k)
	st.Add(saved)
	switch after := ok && s.stands(st, k); {
	case after && !before:
		s.reviewed++
	case before && !after:
		s.reviewed--
	}
	return saved, nil
}

// itemOf is the item whose standing decision e may change: its own, or
// the one of the decision an undo takes back; ok is false for a skip or
// flag.
func (s *Session) itemOf(st *State, e Entry) (ItemKey, bool) {
	if e.Action == ActionUndo {
		t, ok := st.entry(e.Undoes)
		if !ok {
			return ItemKey{}, false
		}
		e = t
	}
	return e.Key(), itemActions[e.Action]
}

// stands reports whether item k is under review and has a standing
// decision in st.
func (s *Session) stands(st *State, k ItemKey) bool {
	if _, ok := st.Items[k]; !ok {
		return false
	}
	_, _, _, ok := s.c.ItemInfo(k)
	return ok
}

// record reads record id whole.
func (s *Session) record(ctx context.Context, id string) (*Record, error) {
	if !s.c.Has(id) {
		return nil, fmt.Errorf("no record %q in this review: %w", id, ErrNoRecord)
	}
	return s.c.Record(ctx, id)
}

// Record reads record id whole, for a page.
func (s *Session) Record(ctx context.Context, id string) (*Record, error) { return s.record(ctx, id) }
