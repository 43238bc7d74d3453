package review

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// Policies settle the items reviewers decided differently.
const (
	PolicyLatest    = "latest"    // the decision made last counts
	PolicyUnanimous = "unanimous" // a conflicting item is left as the corpus has it
	PolicyReviewer  = "reviewer"  // the named reviewer's decision counts; left as it is when they made none
)

// Policy is a parsed --review-policy.
type Policy struct {
	Kind     string // "" (none), PolicyLatest, PolicyUnanimous or PolicyReviewer
	Reviewer string // for PolicyReviewer
}

// ParsePolicy reads latest, unanimous or reviewer:NAME; "" is no policy.
func ParsePolicy(s string) (Policy, error) {
	switch {
	case s == "":
		return Policy{}, nil
	case s == PolicyLatest || s == PolicyUnanimous:
		return Policy{Kind: s}, nil
	case strings.HasPrefix(s, PolicyReviewer+":"):
		name := strings.TrimPrefix(s, PolicyReviewer+":")
		if err := CheckReviewer(name); err != nil {
			return Policy{}, fmt.Errorf("--review-policy %q: %w", s, err)
		}
		return Policy{Kind: PolicyReviewer, Reviewer: name}, nil
	}
	return Policy{}, fmt.Errorf("--review-policy %q is not latest, unanimous or reviewer:NAME", s)
}

func (p Policy) String() string {
	switch p.Kind {
	case "":
		return corpus.PolicyNone
	case PolicyReviewer:
		return PolicyReviewer + ":" + p.Reviewer
	}
	return p.Kind
}

// Decisions are the standing item decisions of several reviewers' logs.
type Decisions struct {
	Logs      []string
	Reviewers []string
	States    []*State
	byItem    map[ItemKey][]Entry // one standing entry per reviewer who decided the item
}

// ErrSameReviewer is wrapped when two logs are one reviewer's.
var ErrSameReviewer = errors.New("two review logs of one reviewer")

// ReadDecisions reads the logs, each of which must carry fingerprint fp
// (ErrOtherCorpus otherwise).
func ReadDecisions(logs []string, fp string) (*Decisions, error) {
	d := &Decisions{Logs: logs, byItem: map[ItemKey][]Entry{}}
	seen := map[string]string{}
	for _, path := range logs {
		h, entries, err := ReadLog(path, fp)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[h.Reviewer]; dup {
			return nil, fmt.Errorf("%s and %s are both %s's: %w", other, path, h.Reviewer, ErrSameReviewer)
		}
		seen[h.Reviewer] = path
		s := Replay(h.Reviewer, entries)
		d.Reviewers = append(d.Reviewers, h.Reviewer)
		d.States = append(d.States, s)
		for _, k := range slices.SortedFunc(maps.Keys(s.Items), compareKeys) {
			d.byItem[k] = append(d.byItem[k], s.Items[k])
		}
	}
	return d, nil
}

func compareKeys(a, b ItemKey) int {
	return cmp.Or(strings.Compare(a.Record, b.Record), cmp.Compare(a.Question, b.Question), cmp.Compare(a.Item, b.Item))
}

// Conflict is an item that reviewers decided differently.
type Conflict struct {
	Key     ItemKey
	Entries []Entry // one per reviewer
}

func (c Conflict) String() string {
	var parts []string
	for _, e := range c.Entries {
		s := e.Reviewer + " " + e.Action
		if e.Action == ActionEdit {
			s += fmt.Sprintf(" to %q", e.After.Text)
		}
		parts = append(parts, s)
	}
	if c.Key.Question > 0 {
		return fmt.Sprintf("record %s question %d criterion %d: %s", c.Key.Record, c.Key.Question, c.Key.Item, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("record %s item %d: %s", c.Key.Record, c.Key.Item, strings.Join(parts, ", "))
}

// same reports whether two decisions do the same to an item.
func same(a, b Entry) bool {
	if a.Action != b.Action {
		return false
	}
	return a.Action != ActionEdit || *a.After == *b.After
}

// Conflicts lists the items whose reviewers' decisions differ, by record
// and item.
func (d *Decisions) Conflicts() []Conflict {
	var out []Conflict
	for _, k := range slices.SortedFunc(maps.Keys(d.byItem), compareKeys) {
		es := d.byItem[k]
		for _, e := range es[1:] {
			if !same(es[0], e) {
				out = append(out, Conflict{Key: k, Entries: es})
				break
			}
		}
	}
	return out
}

// ErrConflicts is wrapped when reviewers disagree and no policy was given.
var ErrConflicts = errors.New("reviewers decided some items differently")

// listedConflicts is how many conflicts an error lists.
const listedConflicts = 10

// Resolve settles every item's decision under p. Without a policy,
// conflicts are an error listing them (ErrConflicts).
func (d *Decisions) Resolve(p Policy) (map[ItemKey]Entry, []Conflict, error) {
	conflicts := d.Conflicts()
	if len(conflicts) > 0 && p.Kind == "" {
		var lines []string
		for _, c := range conflicts[:min(listedConflicts, len(conflicts))] {
			lines = append(lines, "  "+c.String())
		}
		return nil, conflicts, fmt.Errorf("%w: %d item(s) by %s; settle them with --review-policy latest, unanimous or reviewer:NAME:\n%s",
			ErrConflicts, len(conflicts), strings.Join(d.Reviewers, " and "), strings.Join(lines, "\n"))
	}
	if p.Kind == PolicyReviewer && !slices.Contains(d.Reviewers, p.Reviewer) {
		return nil, conflicts, fmt.Errorf("--review-policy reviewer:%s: no log given is %s's (the logs are %s's)", p.Reviewer, p.Reviewer, strings.Join(d.Reviewers, ", "))
	}
	out := map[ItemKey]Entry{}
	for k, es := range d.byItem {
		if e, ok := settle(es, p); ok {
			out[k] = e
		}
	}
	return out, conflicts, nil
}

// settle is the decision on one item under p; ok is false when the item
// is left as the corpus has it.
func settle(es []Entry, p Policy) (Entry, bool) {
	agreed := true
	for _, e := range es[1:] {
		agreed = agreed && same(es[0], e)
	}
	if p.Kind == PolicyReviewer {
		for _, e := range es {
			if e.Reviewer == p.Reviewer {
				return e, true
			}
		}
	}
	if agreed {
		return es[0], true
	}
	if p.Kind == PolicyLatest {
		latest := es[0]
		for _, e := range es[1:] {
			if e.Time.After(latest.Time) {
				latest = e
			}
		}
		return latest, true
	}
	return Entry{}, false
}

// Applier applies settled decisions to records: corpus.ExportReview.
type Applier struct {
	decided map[ItemKey]Entry
	// credit names, for each settled item, every reviewer whose decision
	// is the one applied (two who agree are both credited).
	credit map[ItemKey][]string
	mu     sync.Mutex
	sum    corpus.ReviewSummary
	counts map[string]*corpus.ReviewerCounts
}

// NewApplier applies the decisions of d settled under p.
func NewApplier(d *Decisions, p Policy) (*Applier, error) {
	decided, conflicts, err := d.Resolve(p)
	if err != nil {
		return nil, err
	}
	a := &Applier{decided: decided, credit: map[ItemKey][]string{}, counts: map[string]*corpus.ReviewerCounts{}}
	a.sum = corpus.ReviewSummary{Logs: d.Logs, Policy: p.String(), Conflicts: int64(len(conflicts))}
	for k, e := range decided {
		for _, other := range d.byItem[k] {
			if same(other, e) {
				a.credit[k] = append(a.credit[k], other.Reviewer)
			}
		}
		if len(a.credit[k]) == 0 {
			a.credit[k] = []string{e.Reviewer}
		}
		slices.Sort(a.credit[k])
	}
	for i, r := range d.Reviewers {
		if len(d.States[i].Items) > 0 { // a reviewer who decided nothing is not listed
			a.counts[r] = &corpus.ReviewerCounts{Reviewer: r}
		}
	}
	return a, nil
}

// Apply drops the rejected items of rec, applies the edits, marks the
// accepted and edited items valid (a person's verdict over the judge's),
// numbers the items 1..n again (and the rollouts' satisfaction verdicts
// with them) and says whether the rubric still holds. An edit of the text
// or type drops the figures and verdicts measured on the old text; an
// edit of the weight alone keeps them; an edit that changes nothing (an
// older log's) is an accept. A grounded record's criteria are applied the
// same way (applyGrounded).
//
// A record no decision touched is kept as it is.
func (a *Applier) Apply(rec *schema.Record) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if rec.Grounded != nil {
		return a.applyGrounded(rec)
	}
	if !a.touches(rec) {
		return true
	}
	newID := map[int32]int32{}
	var kept []schema.Item
	for _, it := range rec.Rubric {
		k := ItemKey{Record: rec.ID, Item: it.ID}
		e, ok := a.settled(k, *stateOf(it))
		if !ok {
			newID[it.ID] = int32(len(kept) + 1)
			kept = append(kept, it)
			continue
		}
		switch e.Action {
		case ActionReject:
			continue
		case ActionAccept:
			it = reviewed(it, "accepted in review by "+a.names(k))
			newID[it.ID] = int32(len(kept) + 1)
		case ActionEdit:
			if e.After.Type == it.Type && e.After.Text == it.Text {
				newID[it.ID] = int32(len(kept) + 1) // the weight alone: what was measured holds
			} else {
				it.SatRate, it.Corr, it.EmpiricalValid = nil, nil, nil
			}
			it.Type, it.Text, it.Weight, it.Polarity = e.After.Type, e.After.Text, e.After.Weight, schema.PolarityOf(e.After.Type)
			it = reviewed(it, "edited in review by "+a.names(k))
		}
		kept = append(kept, it)
	}
	for i := range kept {
		kept[i].ID = int32(i + 1)
	}
	rec.Rubric = kept
	renumberVerdicts(rec, newID)
	if schema.CheckRubric(rec.Style, rec.Rubric, 0) != nil {
		a.sum.RecordsDropped++
		return false
	}
	return true
}

// settled is the decision to apply to item k, whose state in the record
// is now, and counts it; ok is false when none applies (none was made, or
// it was made on other text: stale). An edit that changes nothing comes
// back as an accept.
func (a *Applier) settled(k ItemKey, now ItemState) (Entry, bool) {
	e, ok := a.decided[k]
	if !ok {
		return e, false
	}
	if e.Before != nil && *e.Before != now {
		a.sum.Stale++
		return e, false
	}
	if e.Action == ActionEdit && e.After != nil && *e.After == now {
		e.Action, e.After = ActionAccept, nil
	}
	for _, who := range a.credit[k] {
		c := a.counts[who]
		if c == nil {
			c = &corpus.ReviewerCounts{Reviewer: who}
			a.counts[who] = c
		}
		switch e.Action {
		case ActionReject:
			c.Rejected++
		case ActionAccept:
			c.Accepted++
		case ActionEdit:
			c.Edited++
		}
	}
	switch e.Action {
	case ActionReject:
		a.sum.ItemsRejected++
	case ActionAccept:
		a.sum.ItemsAccepted++
	case ActionEdit:
		a.sum.ItemsEdited++
	}
	return e, true
}

// names is who is credited with item k's decision: "alice", "alice and
// bob", "alice, bob and carol".
func (a *Applier) names(k ItemKey) string {
	who := a.credit[k]
	if len(who) <= 1 {
		return strings.Join(who, "")
	}
	return strings.Join(who[:len(who)-1], ", ") + " and " + who[len(who)-1]
}

// touches reports whether a settled decision names an item of rec.
func (a *Applier) touches(rec *schema.Record) bool {
	for _, it := range rec.Rubric {
		if _, ok := a.decided[ItemKey{Record: rec.ID, Item: it.ID}]; ok {
			return true
		}
	}
	return false
}

// reviewed marks it valid by a person.
func reviewed(it schema.Item, why string) schema.Item {
	valid := true
	if it.ValidReason != nil && *it.ValidReason != "" {
		why += "; the judge said: " + *it.ValidReason
	}
	it.Valid, it.ValidReason = &valid, &why
	return it
}

// renumberVerdicts keeps the rollouts' satisfaction verdicts of the items
// in newID, under their new ids.
func renumberVerdicts(rec *schema.Record, newID map[int32]int32) {
	for i := range rec.Rollouts {
		var kept []schema.Satisfaction
		for _, s := range rec.Rollouts[i].Satisfaction {
			if id, ok := newID[s.ID]; ok {
				s.ID = id
				kept = append(kept, s)
			}
		}
		if kept == nil {
			kept = []schema.Satisfaction{}
		}
		rec.Rollouts[i].Satisfaction = kept
	}
}

// Summary is what the applied decisions did.
func (a *Applier) Summary() corpus.ReviewSummary {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sum
	s.Reviewers = nil
	for _, name := range slices.Sorted(maps.Keys(a.counts)) {
		s.Reviewers = append(s.Reviewers, *a.counts[name])
	}
	return s
}
