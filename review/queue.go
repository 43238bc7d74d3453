package review

import (
	"cmp"
	"slices"
)

// Filter selects the items a reviewer is shown; the zero Filter shows all.
type Filter struct {
	Type             string // one item type; "" for every type
	JudgeInvalid     bool   // the validity judge said invalid
	EmpiricalInvalid bool   // the empirical rule said invalid
	LowEdge          bool   // edge below LowEdge
	Unreviewed       bool   // no standing decision of this reviewer
}

// Match reports whether item it of record rec passes f for the reviewer
// whose decisions are s.
func (f Filter) Match(rec *Record, it *Item, s *State) bool {
	switch {
	case f.Type != "" && it.Type != f.Type:
		return false
	case f.JudgeInvalid && (it.Valid == nil || *it.Valid):
		return false
	case f.EmpiricalInvalid && (it.EmpiricalValid == nil || *it.EmpiricalValid):
		return false
	case f.LowEdge && (it.Edge == nil || *it.Edge >= LowEdge):
		return false
	}
	if f.Unreviewed {
		if _, done := s.Items[ItemKey{rec.ID, it.ID}]; done {
			return false
		}
	}
	return true
}

// Queue is the records a reviewer goes through, in order: the record whose
// riskiest item is riskiest first, then by the sum of its items' risks,
// then by id; the records the reviewer skipped go last, and records with
// no item passing f are left out.
func Queue(c *Corpus, f Filter, s *State) []*Record {
	var out []*Record
	sums := map[*Record]int{}
	for _, r := range c.Records {
		sum, any := 0, false
		for i := range r.Items {
			if f.Match(r, &r.Items[i], s) {
				any = true
				sum += r.Items[i].Risk
			}
		}
		if any {
			out = append(out, r)
			sums[r] = sum
		}
	}
	slices.SortStableFunc(out, func(a, b *Record) int {
		return cmp.Or(cmp.Compare(skipped(s, a), skipped(s, b)), cmp.Compare(b.Risk, a.Risk), cmp.Compare(sums[b], sums[a]), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Progress counts the items the reviewer has decided, of all.
func Progress(c *Corpus, s *State) (reviewed, total int) {
	for _, r := range c.Records {
		for _, it := range r.Items {
			total++
			if _, ok := s.Items[ItemKey{r.ID, it.ID}]; ok {
				reviewed++
			}
		}
	}
	return reviewed, total
}

// skipped is 1 for a record the reviewer skipped, else 0.
func skipped(s *State, r *Record) int {
	if s.Skipped[r.ID] {
		return 1
	}
	return 0
}
