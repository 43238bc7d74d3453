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

// maxTextLen bounds an item's or a reason's text as typed on the page.
const maxTextLen = 4000

// ItemDecision is what a page sends for one item.
type ItemDecision struct {
	Action string     // accept, reject or edit
	Reason string     // optional, for a reject
	After  *ItemState // the edited item, for an edit
}

// stateOf is an item's type, text and weight.
func stateOf(it schema.Item) *ItemState {
	return &ItemState{Type: it.Type, Text: it.Text, Weight: it.Weight}
}

// ItemEntry checks d on item id of rec and returns the entry to log.
func ItemEntry(rec *Record, id int32, d ItemDecision, now time.Time) (Entry, error) {
	var it *Item
	for i := range rec.Items {
		if rec.Items[i].ID == id {
			it = &rec.Items[i]
		}
	}
	if it == nil {
		return Entry{}, fmt.Errorf("record %s has no item %d", rec.ID, id)
	}
	if !itemActions[d.Action] {
		return Entry{}, fmt.Errorf("action %q is not accept, reject or edit", d.Action)
	}
	e := Entry{Time: now, Record: rec.ID, Item: id, Action: d.Action, Before: stateOf(it.Item)}
	switch d.Action {
	case ActionReject:
		e.Reason = strings.TrimSpace(d.Reason)
		if len(e.Reason) > maxTextLen {
			return Entry{}, fmt.Errorf("the reason is %d bytes; at most %d", len(e.Reason), maxTextLen)
		}
	case ActionEdit:
		if d.After == nil {
			return Entry{}, fmt.Errorf("an edit needs the item's new text, type and weight: %w", ErrInvalidEdit)
		}
		after := *d.After
		after.Text, after.Type = strings.TrimSpace(after.Text), strings.ToUpper(strings.TrimSpace(after.Type))
		if err := CheckEdit(rec.Style, after); err != nil {
			return Entry{}, err
		}
		e.After = &after
	}
	return e, nil
}

// CheckEdit reports why an edited item would break the rules of its
// style, as a message for the reviewer; nil when it holds.
func CheckEdit(style string, s ItemState) error {
	if len(s.Text) > maxTextLen {
		return fmt.Errorf("the text is %d bytes; at most %d: %w", len(s.Text), maxTextLen, ErrInvalidEdit)
	}
	if math.IsNaN(s.Weight) || math.IsInf(s.Weight, 0) || s.Weight <= 0 {
		return fmt.Errorf("weight %v: it must be a number above 0: %w", s.Weight, ErrInvalidEdit)
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

// RecordEntry is the entry of a skip or flag of rec.
func RecordEntry(rec *Record, action, reason string, now time.Time) (Entry, error) {
	if action != ActionSkip && action != ActionFlag {
		return Entry{}, fmt.Errorf("action %q is not skip or flag", action)
	}
	return Entry{Time: now, Record: rec.ID, Action: action, Reason: strings.TrimSpace(reason)}, nil
}
