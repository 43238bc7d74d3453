package audit

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"

	"github.com/rubricforge/rubricforge/schema"
)

// scored is answers with these score vectors (nil: an unscored answer).
func scored(vectors ...[]float64) []schema.GroundedAnswer {
	out := make([]schema.GroundedAnswer, len(vectors))
	for i, v := range vectors {
		out[i] = schema.GroundedAnswer{Index: int32(i), Text: "answer", Scores: v}
		if v == nil {
			out[i].Scores = []float64{}
		}
	}
	return out
}

// edgeRecords are four passages of one question, criteria weighted 3, 2,
// 2, 1, 1, whose edges were computed by hand:
//   - g001: closed means 1.5, 0, 2, 1, 0.5; open means (an unscored open
//     answer aside) 3, 2, 1, 1, 1: edges 0.5, 1, -0.5, 0, 0.5;
//   - g002: no open-book answers: unmeasured;
//   - g003: open-book answers, but no closed-book answer scored: its five
//     criteria unmeasured;
//   - g004: every score 0 on both sides (edges 0) and criterion 5 of
//     weight 0 (unmeasured).
func edgeRecords() []schema.Record {
	a, b, c, d := groundedRecord(1, 1), groundedRecord(2, 1), groundedRecord(3, 1), groundedRecord(4, 1)
	b.Grounded.Questions[0].Question = "Why must a change reach stable storage first, in passage two?" // no copying
	qa := &a.Grounded.Questions[0]
	qa.Answers = scored([]float64{0, 0, 2, 1, 1}, []float64{3, 0, 2, 1, 0})
	qa.OpenBookAnswers = scored([]float64{3, 2, 2, 1, 1}, nil, []float64{3, 2, 0, 1, 1})
	b.Grounded.Questions[0].Answers = scored([]float64{3, 2, 2, 1, 1})
	qc := &c.Grounded.Questions[0]
	qc.Answers = scored(nil, nil)
	qc.OpenBookAnswers = scored([]float64{3, 2, 2, 1, 1})
	qd := &d.Grounded.Questions[0]
	qd.Criteria[4].Weight = 0
	qd.Answers = scored([]float64{0, 0, 0, 0, 0})
	qd.OpenBookAnswers = scored([]float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0})
	return []schema.Record{a, b, c, d}
}

// TestOpenBookEdgeOnHandMadeRecords: the edge section's counts, means by
// position and histogram are the hand-computed ones, read across shards
// (three records per shard, so two files' figures are merged).
func TestOpenBookEdgeOnHandMadeRecords(t *testing.T) {
	t.Parallel()
	rep := auditPath(t, Options{}, groundedRun(t, edgeRecords()))
	e := rep.Grounded.OpenBookEdge
	if e == nil {
		t.Fatal("no open/closed-book edge section")
	}
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-12 }
	if e.Records != 3 || e.UnmeasuredRecords != 1 || e.Criteria != 9 || e.UnmeasuredCriteria != 6 || e.NotPositive != 6 ||
		!near(e.MeanEdge, 1.5/9) || !near(e.NotPositiveShare, 6.0/9) {
		t.Errorf("edge section %+v (mean %v)", e, fix(e.MeanEdge, 4))
	}
	want := []struct {
		n, notPositive int64
		mean           float64
	}{{2, 1, 0.25}, {2, 1, 0.5}, {2, 2, -0.25}, {2, 2, 0}, {1, 0, 0.5}}
	if len(e.ByPosition) != len(want) {
		t.Fatalf("by position: %+v", e.ByPosition)
	}
	for i, w := range want {
		got := e.ByPosition[i]
		if got.Criteria != w.n || got.NotPositive != w.notPositive || !near(got.MeanEdge, w.mean) || got.Type != "criterion "+string(rune('1'+i)) {
			t.Errorf("position %d: %+v, want %d measured, %d <= 0, mean %v", i+1, got, w.n, w.notPositive, w.mean)
		}
	}
	counts := map[int]int64{5: 1, 10: 5, 15: 2, 19: 1} // -0.5; 0 (five); 0.5 (two); 1 (the last bin holds 1)
	for k, r := range e.Histogram {
		if r.Count != counts[k] {
			t.Errorf("histogram bin %d [%v, %v): %d, want %d", k, r.Lo, r.Hi, r.Count, counts[k])
		}
	}
	var js struct {
		Grounded struct {
			OpenBookEdge *OpenBookEdge `json:"open_book_edge"`
		}
	}
	if err := json.Unmarshal(render(t, rep.WriteJSON), &js); err != nil || js.Grounded.OpenBookEdge == nil || js.Grounded.OpenBookEdge.NotPositive != 6 {
		t.Errorf("JSON report's edge: %+v (%v)", js.Grounded.OpenBookEdge, err)
	}
	html := string(render(t, rep.WriteHTML))
	for _, want := range []string{"Criteria: open/closed-book edge", "Criterion open/closed-book edge (measured criteria)", "<td>0.167</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	text := render(t, rep.WriteText)
	for i, line := range strings.Split(string(text), "\n") {
		if n := len([]rune(line)); n > Width {
			t.Errorf("text line %d is %d columns wide: %q", i+1, n, line)
		}
	}
	golden.Check(t, filepath.Join("testdata", "grounded-edge.txt"), textSection(t, rep, "Grounded criteria: open/closed-book edge"))
}

// TestOpenBookEdgeAbsentWithoutOpenBookAnswers: a grounded corpus made
// without empirical.open_book has no edge section in any format (its
// reports are as before the option), and no record reads as measured.
func TestOpenBookEdgeAbsentWithoutOpenBookAnswers(t *testing.T) {
	t.Parallel()
	recs := edgeRecords()
	for i := range recs {
		for k := range recs[i].Grounded.Questions {
			recs[i].Grounded.Questions[k].OpenBookAnswers = nil
		}
	}
	rep := auditPath(t, Options{}, groundedRun(t, recs))
	if rep.Grounded.OpenBookEdge != nil {
		t.Errorf("edge section without open-book answers: %+v", rep.Grounded.OpenBookEdge)
	}
	for name, out := range map[string]string{"text": string(render(t, rep.WriteText)), "JSON": string(render(t, rep.WriteJSON)), "HTML": string(render(t, rep.WriteHTML))} {
		if strings.Contains(out, "open_book_edge") || strings.Contains(out, "open/closed-book edge") {
			t.Errorf("the %s report shows an edge without open-book answers", name)
		}
	}
}
