package review

// ItemKey names an item of the corpus.
type ItemKey struct {
	Record string
	Item   int32
}

// State is one reviewer's standing decisions: the entries of a log with
// the undone ones taken out.
type State struct {
	Reviewer string
	// Items holds the standing accept, reject or edit of each item.
	Items map[ItemKey]Entry
	// Flagged and Skipped hold the records flagged or skipped.
	Flagged map[string]bool
	Skipped map[string]bool
	// standing lists the seqs of the entries that still count, in order:
	// the last is what an undo takes back.
	standing []int64
}

// Replay folds entries (in log order) into the standing decisions.
func Replay(reviewer string, entries []Entry) *State {
	undone := map[int64]bool{}
	for _, e := range entries {
		if e.Action == ActionUndo {
			undone[e.Undoes] = true
		}
	}
	s := &State{Reviewer: reviewer, Items: map[ItemKey]Entry{}, Flagged: map[string]bool{}, Skipped: map[string]bool{}}
	for _, e := range entries {
		if e.Action == ActionUndo || undone[e.Seq] {
			continue
		}
		s.standing = append(s.standing, e.Seq)
		switch e.Action {
		case ActionFlag:
			s.Flagged[e.Record] = true
		case ActionSkip:
			s.Skipped[e.Record] = true
		default:
			s.Items[ItemKey{e.Record, e.Item}] = e
		}
	}
	return s
}

// LastStanding is the seq of the latest entry that still counts, what an
// undo takes back; 0 when there is none.
func (s *State) LastStanding() int64 {
	if len(s.standing) == 0 {
		return 0
	}
	return s.standing[len(s.standing)-1]
}
