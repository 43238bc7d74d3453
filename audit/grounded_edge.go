package audit

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// OpenBookEdge is the grounded criteria's open/closed-book edge, the
// grounded style's discrimination: a criterion's mean score on the
// open-book answers (written with the passage, empirical.open_book) minus
// its mean score on the closed-book ones, over its weight
// (discrim.GroundedEdge, from -1 to 1). A criterion with edge <= 0 does not
// reward knowing the passage. Only scored answers count; a criterion is
// unmeasured when either side has none or its weight is 0, and every
// criterion of a passage without open-book answers is left out (the
// passage counts as unmeasured). Null when no passage has open-book
// answers.
type OpenBookEdge struct {
	Records            int64    `json:"records"`             // passages with open-book answers
	UnmeasuredRecords  int64    `json:"unmeasured_records"`  // passages without them
	Criteria           int64    `json:"criteria"`            // criteria measured
	UnmeasuredCriteria int64    `json:"unmeasured_criteria"` // of measured passages: no scored answer on a side, or weight 0
	NotPositive        int64    `json:"not_positive"`        // measured criteria with edge <= 0
	NotPositiveShare   *float64 `json:"not_positive_share"`  // null without measured criteria
	MeanEdge           *float64 `json:"mean_edge"`           // null without measured criteria
	// ByPosition is the same by the criterion's position in its question
	// ("criterion 1", ...), as the validity table groups them.
	ByPosition []EdgeCount `json:"by_position"`
	// Histogram counts the measured criteria's edges in twenty bins over [-1, 1].
	Histogram []Range `json:"histogram"`
}

// EdgeCount is the open/closed-book edge of the criteria of one position.
type EdgeCount struct {
	Type        string   `json:"type"`
	Criteria    int64    `json:"criteria"`
	NotPositive int64    `json:"not_positive"`
	MeanEdge    *float64 `json:"mean_edge"`
}

// edgeAcc accumulates the open/closed-book edges of one file.
type edgeAcc struct {
	records, unmeasuredRecords, unmeasuredCriteria int64
	all                                            edgeSum
	byPosition                                     map[int]*edgeSum
	hist                                           discrim.Histogram
}

// edgeSum is a count of measured edges, their sum and how many are <= 0.
type edgeSum struct {
	n, notPositive int64
	sum            float64
}

func (s *edgeSum) add(e float64) {
	s.n++
	s.sum += e
	if e <= 0 {
		s.notPositive++
	}
}

func (s *edgeSum) merge(o edgeSum) {
	s.n, s.notPositive, s.sum = s.n+o.n, s.notPositive+o.notPositive, s.sum+o.sum
}

func (s *edgeSum) mean() *float64 {
	if s.n == 0 {
		return nil
	}
	m := s.sum / float64(s.n)
	return &m
}

func newEdgeAcc() *edgeAcc {
	return &edgeAcc{byPosition: map[int]*edgeSum{}, hist: discrim.Histogram{Lo: -1, Hi: 1}}
}

// add measures the criteria of one passage.
func (a *edgeAcc) add(p *schema.Grounded) {
	if !hasOpenBookAnswers(p) {
		a.unmeasuredRecords++
		return
	}
	a.records++
	for k := range p.Questions {
		q := &p.Questions[k]
		open, closed := scoredAnswers(q.OpenBookAnswers, len(q.Criteria)), scoredAnswers(q.Answers, len(q.Criteria))
		for i, c := range q.Criteria {
			e, ok := discrim.GroundedEdge(column(open, i), column(closed, i), c.Weight)
			if !ok {
				a.unmeasuredCriteria++
				continue
			}
			a.all.add(e)
			a.position(i + 1).add(e)
			a.hist.Add(e)
		}
	}
}

func (a *edgeAcc) position(p int) *edgeSum {
	if a.byPosition[p] == nil {
		a.byPosition[p] = &edgeSum{}
	}
	return a.byPosition[p]
}

func hasOpenBookAnswers(p *schema.Grounded) bool {
	for _, q := range p.Questions {
		if len(q.OpenBookAnswers) > 0 {
			return true
		}
	}
	return false
}

// scoredAnswers are the score vectors of the answers the judge scored (one
// score per criterion); an unscored answer counts on neither side.
func scoredAnswers(as []schema.GroundedAnswer, criteria int) [][]float64 {
	var out [][]float64
	for _, a := range as {
		if len(a.Scores) == criteria && criteria > 0 {
			out = append(out, a.Scores)
		}
	}
	return out
}

// column is criterion i's scores.
func column(scores [][]float64, i int) []float64 {
	out := make([]float64, len(scores))
	for k, s := range scores {
		out[k] = s[i]
	}
	return out
}

func (a *edgeAcc) merge(o *edgeAcc) {
	a.records += o.records
	a.unmeasuredRecords += o.unmeasuredRecords
	a.unmeasuredCriteria += o.unmeasuredCriteria
	a.all.merge(o.all)
	for p, s := range o.byPosition {
		a.position(p).merge(*s)
	}
	for k := range a.hist.Counts {
		a.hist.Counts[k] += o.hist.Counts[k]
	}
}

// report is the OpenBookEdge section, nil when no passage has open-book answers.
func (a *edgeAcc) report() *OpenBookEdge {
	if a.records == 0 {
		return nil
	}
	out := &OpenBookEdge{Records: a.records, UnmeasuredRecords: a.unmeasuredRecords, Criteria: a.all.n,
		UnmeasuredCriteria: a.unmeasuredCriteria, NotPositive: a.all.notPositive, NotPositiveShare: ratio(a.all.notPositive, a.all.n),
		MeanEdge: a.all.mean(), ByPosition: []EdgeCount{}, Histogram: ranges(&a.hist)}
	for _, p := range slices.Sorted(maps.Keys(a.byPosition)) {
		s := a.byPosition[p]
		out.ByPosition = append(out.ByPosition, EdgeCount{Type: fmt.Sprintf("criterion %d", p), Criteria: s.n, NotPositive: s.notPositive, MeanEdge: s.mean()})
	}
	return out
}

// textOpenBookEdge writes the edge's part of the Grounded section.
func (e *OpenBookEdge) text(w io.Writer) {
	heading(w, "Grounded criteria: open/closed-book edge (mean score with the passage minus without, / weight)")
	fmt.Fprintf(w, "%s%s passages measured (they have open-book answers), %s without open-book answers (unmeasured)\n", indent, num(e.Records), num(e.UnmeasuredRecords))
	fmt.Fprintf(w, "%s%s criteria measured, %s unmeasured (no scored answer on a side, or weight 0)\n", indent, num(e.Criteria), num(e.UnmeasuredCriteria))
	if e.Criteria == 0 {
		return
	}
	fmt.Fprintf(w, "%smean edge %s; edge <= 0 (does not reward knowing the passage): %s criteria (%s)\n", indent, fix(e.MeanEdge, 3), num(e.NotPositive), pct(e.NotPositiveShare))
	t := newTable("criterion", "measured", "edge <= 0", "mean edge")
	for _, c := range e.ByPosition {
		t.add(c.Type, num(c.Criteria), num(c.NotPositive), fix(c.MeanEdge, 3))
	}
	t.add("Total", num(e.Criteria), num(e.NotPositive), fix(e.MeanEdge, 3))
	t.write(w)
	fmt.Fprintln(w)
	writeRanges(w, "criterion edge", halve(e.Histogram), e.Criteria, 1)
}
