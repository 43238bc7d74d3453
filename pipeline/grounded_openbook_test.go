package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroundedOpenBookEdge: a grounded run with empirical.open_book against
// the simulator stores rollout.n open-book answers per question beside the
// closed-book ones, each sent with the passage and scored by the grounded
// judge; the criteria grounded in the passage score higher with it (a
// positive mean edge, most criteria above zero); the template's hash is in
// the job's; and a second run sends nothing.
func TestGroundedOpenBookEdge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	runtest.WriteDocs(t, docs, 3)
	srv, url := runtest.StartSim(t, sim.Config{KeepLog: true})
	j := runtest.GroundedTestJob(docs, filepath.Join(dir, "run"), url)
	j.Empirical.OpenBook = true
	rep := runJob(t, j, Options{HTTPClient: runtest.InProcess})
	if rep.Status != StatusFinished {
		t.Fatalf("status %s (%s)", rep.Status, rep.StopReason)
	}
	recs := checkGroundedAccounted(t, j, rep)
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	sentOpen := 0
	for _, e := range srv.Log() {
		if e.Kind == sim.KindGroundedAnswerOpen {
			sentOpen++
		}
	}
	var edges []float64
	questions := 0
	for id, r := range recs {
		for _, q := range r.Grounded.Questions {
			questions++
			closed, open := scoredColumns(q.Answers, len(q.Criteria)), scoredColumns(q.OpenBookAnswers, len(q.Criteria))
			if len(open) != j.Rollout.N || len(closed) != j.Rollout.N {
				t.Fatalf("record %s question %d: %d open-book and %d closed-book answers scored, want %d each", id, q.Index, len(open), len(closed), j.Rollout.N)
			}
			for k, a := range q.OpenBookAnswers {
				if a.Index != int32(k) || a.Text == q.Answers[k].Text || !strings.Contains(a.Text, "The passage makes this concrete") {
					t.Errorf("record %s question %d: open-book answer %d is %+v (closed-book: %q)", id, q.Index, k, a, q.Answers[k].Text)
				}
			}
			for i, c := range q.Criteria {
				e, ok := discrim.GroundedEdge(column(open, i), column(closed, i), c.Weight)
				if !ok {
					t.Fatalf("record %s question %d criterion %s: no edge", id, q.Index, c.ID)
				}
				edges = append(edges, e)
			}
		}
	}
	if sentOpen != questions*j.Rollout.N {
		t.Errorf("the simulator saw %d open-book answer prompts, want %d questions x %d", sentOpen, questions, j.Rollout.N)
	}
	positive, sum := 0, 0.0
	for _, e := range edges {
		sum += e
		if e > 0 {
			positive++
		}
	}
	if mean := sum / float64(len(edges)); mean < 0.2 || positive*10 < len(edges)*7 {
		t.Errorf("mean open/closed-book edge %.3f, %d of %d criteria positive; want the passage-grounded criteria to reward the passage", mean, positive, len(edges))
	}
	if g := rep.Grounded; g == nil || g.OpenBookScored != int64(questions*j.Rollout.N) || g.OpenBookUnscored != 0 {
		t.Errorf("report's open-book answers: %+v, want %d scored", g, questions*j.Rollout.N)
	}
	var summary strings.Builder
	rep.WriteSummary(&summary, j.Out)
	if want := fmt.Sprintf("open-book answers: %d scored, 0 unscored", questions*j.Rollout.N); !strings.Contains(summary.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, summary.String())
	}
	stamped, err := os.ReadFile(filepath.Join(j.Out, corpus.JobName))
	if err != nil || !strings.Contains(string(stamped), "grounded_answer_open: ") || !strings.Contains(string(stamped), "open_book: true") {
		t.Errorf("job.yaml does not carry the open-book setting and template hash (%v):\n%s", err, stamped)
	}
	before := srv.Count()
	runJob(t, j, Options{HTTPClient: runtest.InProcess})
	if srv.Count() != before {
		t.Errorf("a finished open-book run sent %d requests when run again", srv.Count()-before)
	}
}

// scoredColumns are the score vectors of the scored answers.
func scoredColumns(as []schema.GroundedAnswer, criteria int) [][]float64 {
	var out [][]float64
	for _, a := range as {
		if len(a.Scores) == criteria {
			out = append(out, a.Scores)
		}
	}
	return out
}

func column(scores [][]float64, i int) []float64 {
	out := make([]float64, len(scores))
	for k, s := range scores {
		out[k] = s[i]
	}
	return out
}
