package audit

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/schema"
)

// SampleItem is one rubric item drawn for annotation or re-judging, with
// what a judge needs to see and the verdict stored in the corpus. A
// grounded criterion (Type CriterionType) is drawn under its question's
// id, its Problem the question and its Answer the passage, and Criterion
// holds what its validity judge is shown of it (name, description,
// weight, required elements); Criterion is nil for a rubric item.
type SampleItem struct {
	RecordID  string
	ItemID    int32
	Type      string
	Text      string
	Problem   string
	Answer    string
	Stored    *bool // the stored LLM verdict; nil when the item was not judged
	Criterion *schema.Criterion
	key       uint64
}

// Sample draws n rubric items from in, reproducibly: each item gets the key
// xxhash64(seed, record id, item id) and the n items with the smallest keys
// are drawn. The draw depends only on the seed and the items, not on the
// order of files or rows, and a larger n draws a superset. With judgedOnly
// only items with a stored verdict take part. eligible counts the items
// that did; problems lists unreadable input. The items come in key order,
// which is a random order.
func Sample(ctx context.Context, in *Input, n int, seed uint64, judgedOnly bool) (items []SampleItem, eligible int64, problems []Problem, err error) {
	return SampleItems(ctx, in, n, seed, judgedOnly, false)
}

// SampleItems is Sample that, with criteria, draws grounded records'
// criteria too (each as its question id and position: judgedCriteria), so
// that people can label a grounded corpus's criteria against their
// passage.
func SampleItems(ctx context.Context, in *Input, n int, seed uint64, judgedOnly, criteria bool) (items []SampleItem, eligible int64, problems []Problem, err error) {
	if n <= 0 {
		return nil, 0, nil, fmt.Errorf("sample size %d: it must be positive", n)
	}
	h := &maxHeap{}
	problems, err = scanJudged(ctx, in, func(r *judgedRow) {
		var all []SampleItem
		for _, it := range r.Rubric {
			all = append(all, SampleItem{RecordID: r.ID, ItemID: it.ID, Type: it.Type, Text: it.Text, Problem: r.Problem, Answer: r.Answer, Stored: it.Valid})
		}
		if criteria {
			all = append(all, r.judgedCriteria()...)
		}
		for _, s := range all {
			if judgedOnly && s.Stored == nil {
				continue
			}
			eligible++
			s.key = sampleKey(seed, s.RecordID, s.ItemID)
			if h.Len() == n && s.key >= (*h)[0].key {
				continue
			}
			heap.Push(h, s)
			if h.Len() > n {
				heap.Pop(h)
			}
		}
	})
	if err != nil {
		return nil, 0, nil, err
	}
	items = []SampleItem(*h)
	slices.SortFunc(items, func(a, b SampleItem) int { return cmp.Compare(a.key, b.key) })
	return items, eligible, problems, nil
}

// scanJudged passes each record of in to fn once (a duplicate record's
// first copy counts), with what sampling reads of it; problems lists
// unreadable input, and the error is the context's.
func scanJudged(ctx context.Context, in *Input, fn func(*judgedRow)) (problems []Problem, err error) {
	seen := map[string]bool{}
	bad := func(p Problem) { problems = append(problems, p) }
	for _, f := range in.Files {
		_, err := scanFile(f, in.Format, judgedOfLabel, func(r *judgedRow, _ int64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !seen[r.ID] {
				seen[r.ID] = true
				fn(r)
			}
			return nil
		}, bad)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			bad(Problem{File: f.Path, Error: err.Error()})
		}
	}
	return problems, nil
}

// sampleKey is an item's place in the draw of a seed.
func sampleKey(seed uint64, recordID string, itemID int32) uint64 {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint32(b[8:], uint32(itemID))
	d := xxhash.New()
	d.Write(b[:])
	d.WriteString(recordID)
	return d.Sum64()
}

// maxHeap keeps the drawn items with the largest key on top.
type maxHeap []SampleItem

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i].key > h[j].key }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(SampleItem)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// SampleRecords draws n records from in for the order check, reproducibly:
// each record with at least two judged items (one item has no order to
// change), and each grounded question with at least two judged criteria,
// gets the key xxhash64(seed, record or question id) and the n with the
// smallest keys are drawn, each with all its judged items (criteria) in
// rubric order. Records come in key order. eligible counts the judged
// items of the records that took part.
func SampleRecords(ctx context.Context, in *Input, n int, seed uint64) (groups [][]SampleItem, eligible int64, problems []Problem, err error) {
	if n <= 0 {
		return nil, 0, nil, fmt.Errorf("records to draw %d: it must be positive", n)
	}
	h := &recordHeap{}
	problems, err = scanJudged(ctx, in, func(r *judgedRow) {
		for _, g := range judgedGroups(r) {
			if len(g) < 2 {
				continue
			}
			eligible += int64(len(g))
			k := sampleKey(seed, g[0].RecordID, -1)
			if h.Len() == n && k >= (*h)[0][0].key {
				continue
			}
			for i := range g {
				g[i].key = k
			}
			heap.Push(h, g)
			if h.Len() > n {
				heap.Pop(h)
			}
		}
	})
	if err != nil {
		return nil, 0, nil, err
	}
	groups = [][]SampleItem(*h)
	slices.SortFunc(groups, func(a, b []SampleItem) int { return cmp.Compare(a[0].key, b[0].key) })
	return groups, eligible, problems, nil
}

// judgedGroups are what one request of a record judges together: its
// rubric's items with a stored verdict, and each of its grounded
// questions' criteria with one, in order.
func judgedGroups(r *judgedRow) [][]SampleItem {
	out := [][]SampleItem{judgedItems(r)}
	for _, q := range r.questionCriteria() {
		judged := slices.DeleteFunc(q, func(s SampleItem) bool { return s.Stored == nil })
		out = append(out, judged)
	}
	return out
}

// judgedItems are a record's items with a stored verdict, in rubric order.
func judgedItems(r *judgedRow) []SampleItem {
	var g []SampleItem
	for _, it := range r.Rubric {
		if it.Valid != nil {
			g = append(g, SampleItem{RecordID: r.ID, ItemID: it.ID, Type: it.Type, Text: it.Text, Problem: r.Problem, Answer: r.Answer, Stored: it.Valid})
		}
	}
	slices.SortFunc(g, func(a, b SampleItem) int { return cmp.Compare(a.ItemID, b.ItemID) })
	return g
}

// recordHeap keeps the drawn records with the largest key on top.
type recordHeap [][]SampleItem

func (h recordHeap) Len() int           { return len(h) }
func (h recordHeap) Less(i, j int) bool { return h[i][0].key > h[j][0].key }
func (h recordHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)        { *h = append(*h, x.([]SampleItem)) }
func (h *recordHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
