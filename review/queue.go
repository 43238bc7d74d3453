package review

import (
	"cmp"
	"slices"
	"sync"
)

// Filter selects the items a reviewer is shown; the zero Filter shows all.
type Filter struct {
	Type             string // one item type (CriterionType for criteria); "" for every type
	JudgeInvalid     bool   // the validity judge said invalid
	EmpiricalInvalid bool   // the empirical rule said invalid (a criterion: its score never varies)
	LowEdge          bool   // edge below LowEdge
	Unreviewed       bool   // no standing decision of this reviewer
	Flagged          bool   // only records the reviewer flagged
}

// Match reports whether item it of record rec passes f for the reviewer
// whose decisions are s.
func (f Filter) Match(rec *Record, it *Item, s Standing) bool {
	typ := it.Type
	if it.Key.Question > 0 {
		typ = CriterionType
	}
	switch {
	case f.Type != "" && typ != f.Type:
		return false
	case f.JudgeInvalid && (it.Valid == nil || *it.Valid):
		return false
	case f.EmpiricalInvalid && (it.EmpiricalValid == nil || *it.EmpiricalValid):
		return false
	case f.LowEdge && (it.Edge == nil || *it.Edge >= LowEdge):
		return false
	case f.Flagged && !s.IsFlagged(rec.ID):
		return false
	}
	if f.Unreviewed {
		if _, done := s.Decision(it.Key); done {
			return false
		}
	}
	return true
}

// static is the part of f that does not change with the reviewer's
// decisions: it fixes the queue's order.
func (f Filter) static() Filter {
	return Filter{Type: f.Type, JudgeInvalid: f.JudgeInvalid, EmpiricalInvalid: f.EmpiricalInvalid, LowEdge: f.LowEdge}
}

// matchIndexed is Match on the index, without the reviewer's decisions.
func (c *Corpus) matchIndexed(f Filter, it *itemEntry) bool {
	switch {
	case f.Type != "" && c.typeName(it.typ) != f.Type:
		return false
	case f.JudgeInvalid && it.flags&judgeInvalid == 0:
		return false
	case f.EmpiricalInvalid && it.flags&empiricalInvalid == 0:
		return false
	case f.LowEdge && it.flags&lowEdge == 0:
		return false
	}
	return true
}

// Queue is the records a reviewer goes through, in order: the record whose
// riskiest item is riskiest first, then by the sum of its items' risks,
// then by id; the records the reviewer skipped go last, and records with
// no item passing the filter are left out.
type Queue struct {
	c     *Corpus
	order []int32
}

// Queue is the queue under f for the reviewer whose decisions are s. Its
// order under f's static part is worked out once and kept; a queue the
// reviewer's decisions do not change (nothing skipped, no flagged or
// unreviewed filter) is that order as it is.
func (c *Corpus) Queue(f Filter, s Standing) *Queue {
	base := c.orders.get(c, f.static())
	skipped := c.indexes(s.SkippedRecords())
	if len(skipped) == 0 && !f.Flagged && !f.Unreviewed {
		return &Queue{c: c, order: base}
	}
	var flagged map[int32]bool
	if f.Flagged {
		flagged = c.indexes(s.FlaggedRecords())
	}
	q := &Queue{c: c, order: make([]int32, 0, len(base))}
	var last []int32
	for _, i := range base {
		if f.Flagged && !flagged[i] {
			continue
		}
		if f.Unreviewed && !c.hasUndecided(&c.recs[i], f, s) {
			continue
		}
		if skipped[i] {
			last = append(last, i)
			continue
		}
		q.order = append(q.order, i)
	}
	q.order = append(q.order, last...)
	return q
}

// indexes are the places in the index of the records ids names.
func (c *Corpus) indexes(ids []string) map[int32]bool {
	out := make(map[int32]bool, len(ids))
	for _, id := range ids {
		if i, ok := c.byID[id]; ok {
			out[i] = true
		}
	}
	return out
}

// hasUndecided reports whether r has an item passing f's static part that
// the reviewer has not decided.
func (c *Corpus) hasUndecided(r *recEntry, f Filter, s Standing) bool {
	none := s.DecidedIn(r.recordID()) == 0
	for k := range r.items {
		it := &r.items[k]
		if !c.matchIndexed(f, it) {
			continue
		}
		if none {
			return true
		}
		if _, done := s.Decision(r.key(it)); !done {
			return true
		}
	}
	return false
}

// Len is the number of records in the queue.
func (q *Queue) Len() int { return len(q.order) }

// ID is the id of the record at i.
func (q *Queue) ID(i int) string { return q.c.recs[q.order[i]].id }

// Index is the place of record id in the queue; -1 when it is not in it.
func (q *Queue) Index(id string) int {
	i, ok := q.c.byID[id]
	if !ok {
		return -1
	}
	return slices.Index(q.order, i)
}

// IDs lists the queue's records in order.
func (q *Queue) IDs() []string {
	out := make([]string, len(q.order))
	for i := range q.order {
		out[i] = q.ID(i)
	}
	return out
}

// orderCache keeps the queue's order for the last few static filters.
type orderCache struct {
	mu      sync.Mutex
	filters []Filter
	orders  [][]int32
}

// cachedOrders is how many filters' orders a corpus keeps.
const cachedOrders = 4

func (oc *orderCache) get(c *Corpus, f Filter) []int32 {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if i := slices.Index(oc.filters, f); i >= 0 {
		return oc.orders[i]
	}
	o := c.order(f)
	if len(oc.filters) == cachedOrders {
		oc.filters, oc.orders = oc.filters[1:], oc.orders[1:]
	}
	oc.filters, oc.orders = append(oc.filters, f), append(oc.orders, o)
	return o
}

// order sorts the records with an item passing the static filter f.
func (c *Corpus) order(f Filter) []int32 {
	out := make([]int32, 0, len(c.recs))
	sums := make([]int32, len(c.recs))
	for i := range c.recs {
		r := &c.recs[i]
		any := false
		for k := range r.items {
			if c.matchIndexed(f, &r.items[k]) {
				any = true
				sums[i] += int32(r.items[k].risk)
			}
		}
		if any {
			out = append(out, int32(i))
		}
	}
	slices.SortFunc(out, func(a, b int32) int {
		ra, rb := &c.recs[a], &c.recs[b]
		return cmp.Or(cmp.Compare(rb.risk, ra.risk), cmp.Compare(sums[b], sums[a]), cmp.Compare(ra.id, rb.id))
	})
	return out
}

// Progress counts the items the reviewer has decided, of all under review.
func Progress(c *Corpus, s *State) (reviewed, total int) {
	for k := range s.Items {
		if _, _, _, ok := c.ItemInfo(k); ok {
			reviewed++
		}
	}
	return reviewed, c.Items()
}
