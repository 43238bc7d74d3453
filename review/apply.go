package review

import (
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
	if c := strings.Compare(a.Record, b.Record); c != 0 {
		return c
	}
	return int(a.Item - b.Item)
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
	mu      sync.Mutex
	sum     corpus.ReviewSummary
	counts  map[string]*corpus.ReviewerCounts
}

// NewApplier applies the decisions of d settled under p.
func NewApplier(d *Decisions, p Policy) (*Applier, error) {
	decided, conflicts, err := d.Resolve(p)
	if err != nil {
		return nil, err
	}
	a := &Applier{decided: decided, counts: map[string]*corpus.ReviewerCounts{}}
	a.sum = corpus.ReviewSummary{Logs: d.Logs, Policy: p.String(), Conflicts: int64(len(conflicts))}
	for _, r := range d.Reviewers {
		a.counts[r] = &corpus.ReviewerCounts{Reviewer: r}
	}
	return a, nil
}

// Apply drops the rejected items of rec, applies the edits, marks the
// accepted and edited items valid (a person's verdict over the judge's),
// numbers the items 1..n again (and the rollouts' satisfaction verdicts
// with them; an edited item's verdicts, measured on its old text, are
// dropped with its figures) and says whether the rubric still holds.
//
// A record no decision touched is kept as it is, grounded ones included.
func (a *Applier) Apply(rec *schema.Record) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.touches(rec) {
		return true
	}
	newID := map[int32]int32{}
	var kept []schema.Item
	for _, it := range rec.Rubric {
		e, ok := a.decided[ItemKey{rec.ID, it.ID}]
		if ok && e.Before != nil && *e.Before != *stateOf(it) {
			a.sum.Stale++
			ok = false
		}
		if !ok {
			newID[it.ID] = int32(len(kept) + 1)
			kept = append(kept, it)
			continue
		}
		c := a.counts[e.Reviewer]
		switch e.Action {
		case ActionReject:
			a.sum.ItemsRejected++
			c.Rejected++
			continue
		case ActionAccept:
			a.sum.ItemsAccepted++
			c.Accepted++
			it = reviewed(it, "accepted in review by "+e.Reviewer)
			newID[it.ID] = int32(len(kept) + 1)
		case ActionEdit:
			a.sum.ItemsEdited++
			c.Edited++
			it.Type, it.Text, it.Weight, it.Polarity = e.After.Type, e.After.Text, e.After.Weight, schema.PolarityOf(e.After.Type)
			it.SatRate, it.Corr, it.EmpiricalValid = nil, nil, nil
			it = reviewed(it, "edited in review by "+e.Reviewer)
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

// touches reports whether a settled decision names an item of rec.
func (a *Applier) touches(rec *schema.Record) bool {
	for _, it := range rec.Rubric {
		if _, ok := a.decided[ItemKey{rec.ID, it.ID}]; ok {
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
