package audit

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"

	"github.com/rubricforge/rubricforge/schema"
)

// ResponseGroup is one problem's responses drawn to be judged again for
// satisfaction (validate rejudge --judge-group): a math record's rollouts
// against its rubric, or a grounded question's closed-book answers
// against its criteria and passage. Items (math) and Criteria (grounded)
// leave out what the corpus's judge called invalid, as an export does.
type ResponseGroup struct {
	ID        string // the record's id, or the grounded question's (schema.QuestionID)
	Problem   string // the problem, or the question
	Items     []schema.Item
	Passage   string
	Criteria  []schema.Criterion
	Responses []Response
	key       uint64
}

// Grounded reports whether g is a grounded question.
func (g *ResponseGroup) Grounded() bool { return g.Criteria != nil }

// Response is one response of a group: its index among the record's
// rollouts (the question's answers), its text and the final answer
// extracted from it (math).
type Response struct {
	Index     int32
	Text      string
	Extracted string
}

// responseRow is what drawing response groups reads of a record.
type responseRow struct {
	ID       string            `parquet:"id" json:"id"`
	Problem  string            `parquet:"problem" json:"problem"`
	Rubric   []item            `parquet:"rubric,list" json:"rubric"`
	Rollouts []responseRollout `parquet:"rollouts,list" json:"rollouts"`
	Grounded *responseGrounded `parquet:"grounded,optional" json:"grounded,omitempty"`
}

type responseRollout struct {
	Index           int32  `parquet:"index" json:"index"`
	Text            string `parquet:"text" json:"text"`
	ExtractedAnswer string `parquet:"extracted_answer" json:"extracted_answer"`
}

type responseGrounded struct {
	Passage   string             `parquet:"passage" json:"passage"`
	Questions []responseQuestion `parquet:"questions,list" json:"questions"`
}

type responseQuestion struct {
	Index    int32              `parquet:"index" json:"index"`
	Question string             `parquet:"question" json:"question"`
	Criteria []schema.Criterion `parquet:"criteria,list" json:"criteria"`
	Answers  []responseAnswer   `parquet:"answers,list" json:"answers"`
}

type responseAnswer struct {
	Index int32  `parquet:"index" json:"index"`
	Text  string `parquet:"text" json:"text"`
}

// responseRowOfLabel: a verl export's label keeps no responses.
func responseRowOfLabel(l *schema.Label, _ string) responseRow { return responseRow{ID: l.ID} }

// groups are a record's response groups: its rollouts, or each grounded
// question's answers, each with what they are judged against.
func (r *responseRow) groups() []ResponseGroup {
	var out []ResponseGroup
	if r.Grounded != nil {
		for _, q := range r.Grounded.Questions {
			g := ResponseGroup{ID: schema.QuestionID(r.ID, q.Index), Problem: q.Question, Passage: r.Grounded.Passage, Criteria: []schema.Criterion{}}
			for _, c := range q.Criteria {
				if c.Valid == nil || *c.Valid {
					g.Criteria = append(g.Criteria, c)
				}
			}
			for _, a := range q.Answers {
				g.Responses = append(g.Responses, Response{Index: a.Index, Text: a.Text})
			}
			out = append(out, g)
		}
		return out
	}
	g := ResponseGroup{ID: r.ID, Problem: r.Problem}
	for i := range r.Rubric {
		if it := &r.Rubric[i]; it.Valid == nil || *it.Valid {
			g.Items = append(g.Items, it.schemaItem())
		}
	}
	for _, ro := range r.Rollouts {
		g.Responses = append(g.Responses, Response{Index: ro.Index, Text: ro.Text, Extracted: ro.ExtractedAnswer})
	}
	return append(out, g)
}

// judgeable reports whether g can be judged as a group: two responses
// with text or more, and something to judge them against.
func (g *ResponseGroup) judgeable() bool {
	texts := 0
	for _, r := range g.Responses {
		if r.Text != "" {
			texts++
		}
	}
	return texts >= 2 && (len(g.Items) > 0 || len(g.Criteria) > 0)
}

// SampleResponseGroups draws n response groups from in, reproducibly: each
// math record with two rollouts or more and each grounded question with
// two closed-book answers or more gets the key xxhash64(seed, id) and the
// n with the smallest keys are drawn, in key order, each with its
// responses that have a text. eligible counts the groups that took part.
// A verl export keeps no responses, so none of its rows does.
func SampleResponseGroups(ctx context.Context, in *Input, n int, seed uint64) (groups []ResponseGroup, eligible int64, problems []Problem, err error) {
	if n <= 0 {
		return nil, 0, nil, fmt.Errorf("groups to draw %d: it must be positive", n)
	}
	h := &groupHeap{}
	seen := map[string]bool{}
	bad := func(p Problem) { problems = append(problems, p) }
	for _, f := range in.Files {
		_, err := scanFile(f, in.Format, responseRowOfLabel, func(r *responseRow, _ int64) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if seen[r.ID] {
				return nil
			}
			seen[r.ID] = true
			for _, g := range r.groups() {
				if !g.judgeable() {
					continue
				}
				eligible++
				g.key = sampleKey(seed, g.ID, -2)
				if h.Len() == n && g.key >= (*h)[0].key {
					continue
				}
				g.Responses = slices.DeleteFunc(g.Responses, func(r Response) bool { return r.Text == "" })
				heap.Push(h, g)
				if h.Len() > n {
					heap.Pop(h)
				}
			}
			return nil
		}, bad)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, nil, ctx.Err()
			}
			bad(Problem{File: f.Path, Error: err.Error()})
		}
	}
	groups = []ResponseGroup(*h)
	slices.SortFunc(groups, func(a, b ResponseGroup) int { return cmp.Compare(a.key, b.key) })
	return groups, eligible, problems, nil
}

// groupHeap keeps the drawn groups with the largest key on top.
type groupHeap []ResponseGroup

func (h groupHeap) Len() int           { return len(h) }
func (h groupHeap) Less(i, j int) bool { return h[i].key > h[j].key }
func (h groupHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *groupHeap) Push(x any)        { *h = append(*h, x.(ResponseGroup)) }
func (h *groupHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
