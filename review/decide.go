package review

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// ErrInvalidEdit is wrapped when an edit would make an item break the
// corpus's rules (blank text, a weight not above 0, a type the style does
// not have); the message says which, for the reviewer.
var ErrInvalidEdit = errors.New("the edit would make the item invalid")

// ErrBadDecision is wrapped when a decision names no item of the record,
// an action there is not, or a reason too long.
var ErrBadDecision = errors.New("not a decision the page makes")

// maxTextLen bounds an item's or a reason's text as typed on the page.
const maxTextLen = 4000

// ItemDecision is what a page sends for one item.
type ItemDecision struct {
	Action string     // accept, reject or edit
	Reason string     // optional, for a reject
	After  *ItemState // the edited item, for an edit
	// Seen is the seq of the decision the page showed standing on the
	// item when the reviewer pressed the key (0: none). A decision made on
	// a view older than what stands is refused (ErrStale); nil: not
	// checked.
	Seen *int64
}

// stateOf is an item's type, text and weight.
func stateOf(it schema.Item) *ItemState {
	return &ItemState{Type: it.Type, Text: it.Text, Weight: it.Weight}
}

// ItemEntry checks d on the item k of rec against what stands and returns
// the entry to log. A decision that would change nothing is refused
// (ErrNoChange), as is one made on a stale view (ErrStale) and an edit
// that would break the corpus's rules (ErrInvalidEdit).
func (s *State) ItemEntry(rec *Record, k ItemKey, d ItemDecision, now time.Time) (Entry, error) {
	it := rec.Item(k)
	if it == nil {
		if k.Question > 0 {
			return Entry{}, fmt.Errorf("record %s has no criterion %d in question %d: %w", rec.ID, k.Item, k.Question, ErrBadDecision)
		}
		return Entry{}, fmt.Errorf("record %s has no item %d: %w", rec.ID, k.Item, ErrBadDecision)
	}
	if !itemActions[d.Action] {
		return Entry{}, fmt.Errorf("action %q is not accept, reject or edit: %w", d.Action, ErrBadDecision)
	}
	standing, decided := s.Items[k]
	if d.Seen != nil && *d.Seen != standing.Seq {
		if !decided {
			return Entry{}, fmt.Errorf("%w: the decision on %s the page showed was undone since", ErrStale, k)
		}
		return Entry{}, fmt.Errorf("%w: %s stands on %s now (made in another tab?): the page now shows it", ErrStale, standing.Action, k)
	}
	e := Entry{Time: now, Record: k.Record, Question: k.question(), Item: k.Item, Action: d.Action, Before: stateOf(it.Item)}
	switch d.Action {
	case ActionAccept:
		if decided && standing.Action == ActionAccept {
			return Entry{}, fmt.Errorf("%w: %s is already accepted", ErrNoChange, k)
		}
	case ActionReject:
		e.Reason = strings.TrimSpace(d.Reason)
		if len(e.Reason) > maxTextLen {
			return Entry{}, fmt.Errorf("the reason is %d bytes; at most %d: %w", len(e.Reason), maxTextLen, ErrBadDecision)
		}
		if decided && standing.Action == ActionReject && standing.Reason == e.Reason {
			return Entry{}, fmt.Errorf("%w: %s is already rejected", ErrNoChange, k)
		}
	case ActionEdit:
		after, err := checkedEdit(rec.Style, d.After)
		if err != nil {
			return Entry{}, err
		}
		if after == *e.Before {
			return Entry{}, fmt.Errorf("%w: the edit leaves the item as the corpus has it (a accepts it as written)", ErrNoChange)
		}
		if decided && standing.Action == ActionEdit && *standing.After == after {
			return Entry{}, fmt.Errorf("%w: the edit leaves the item as it is: it is what the item says now", ErrNoChange)
		}
		e.After = &after
	}
	return e, nil
}

// checkedEdit is an edit's item trimmed and checked against the style.
func checkedEdit(style string, after *ItemState) (ItemState, error) {
	if after == nil {
		return ItemState{}, fmt.Errorf("an edit needs the item's new text, type and weight: %w", ErrInvalidEdit)
	}
	a := *after
	a.Text, a.Type = strings.TrimSpace(a.Text), strings.ToUpper(strings.TrimSpace(a.Type))
	if style == schema.StyleGrounded {
		a.Type = ""
	}
	return a, CheckEdit(style, a)
}

// CheckEdit reports why an edited item would break the rules of its
// style, as a message for the reviewer; nil when it holds. A grounded
// criterion has no type; its description and weight are checked.
func CheckEdit(style string, s ItemState) error {
	if len(s.Text) > maxTextLen {
		return fmt.Errorf("the text is %d bytes; at most %d: %w", len(s.Text), maxTextLen, ErrInvalidEdit)
	}
	if math.IsNaN(s.Weight) || math.IsInf(s.Weight, 0) || s.Weight <= 0 {
		return fmt.Errorf("weight %v: it must be a number above 0: %w", s.Weight, ErrInvalidEdit)
	}
	if style == schema.StyleGrounded {
		if strings.TrimSpace(s.Text) == "" {
			return fmt.Errorf("the description is blank: %w", ErrInvalidEdit)
		}
		return nil
	}
	it := schema.Item{ID: 1, Type: s.Type, Text: s.Text, Weight: s.Weight, Polarity: schema.PolarityOf(s.Type)}
	for _, v := range schema.RubricViolations(style, []schema.Item{it}, 0) {
		if v.Err.Item == 0 {
			continue // a rule of the whole rubric, not of this item
		}
		return fmt.Errorf("%s %s: %w", v.Err.Field, v.Err.Msg, ErrInvalidEdit)
	}
	return nil
}

// LineBreaks reports whether an item of style may hold a line break (an
// SRaR item may not).
func LineBreaks(style string) bool { return style != schema.StyleSRaR }

// RecordEntry is the entry of a skip, flag or unflag of record id. A flag
// of a flagged record, an unflag of one not flagged and a second skip
// change nothing and are refused (ErrNoChange).
func (s *State) RecordEntry(id, action, reason string, now time.Time) (Entry, error) {
	if !recordActions[action] {
		return Entry{}, fmt.Errorf("action %q is not skip, flag or unflag: %w", action, ErrBadDecision)
	}
	switch {
	case action == ActionFlag && s.Flagged[id]:
		return Entry{}, fmt.Errorf("%w: record %s is already flagged (F takes the flag away)", ErrNoChange, id)
	case action == ActionUnflag && !s.Flagged[id]:
		return Entry{}, fmt.Errorf("%w: record %s is not flagged", ErrNoChange, id)
	case action == ActionSkip && s.Skipped[id]:
		return Entry{}, fmt.Errorf("%w: record %s is already skipped", ErrNoChange, id)
	}
	return Entry{Time: now, Record: id, Action: action, Reason: strings.TrimSpace(reason)}, nil
}

// EditTypes lists the item types an edit of an item of style may choose;
// none for a grounded criterion, which has no type.
func EditTypes(style string) []string {
	switch style {
	case schema.StyleSRaR:
		return []string{schema.TypeSuggest, schema.TypePitfall, schema.TypeBonus, schema.TypeAnswer}
	case schema.StyleFactualProcess:
		return []string{schema.TypeFactual, schema.TypeProcess}
	}
	return nil
}
