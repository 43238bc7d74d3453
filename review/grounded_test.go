package review

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/schema"
)

// TestGroundedCriteriaAreItems: a grounded corpus is reviewable: every
// criterion is an item, keyed by its question, shown with the passage and
// its question, its judge verdict and whether its score varies.
func TestGroundedCriteriaAreItems(t *testing.T) {
	run := filepath.Join(t.TempDir(), "grounded")
	if err := reviewtest.GroundedRun(run, 3); err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.Context(), []string{run}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Len() != 3 || c.Items() != 18 {
		t.Fatalf("%d records, %d items; want 3 and 18 criteria", c.Len(), c.Items())
	}
	rec, err := c.Record(t.Context(), "doc00.md#0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rec.Passage, "Passage 0.") || len(rec.Questions) != 2 || len(rec.Items) != 6 {
		t.Fatalf("the record shows passage %q, %d questions, %d items", rec.Passage, len(rec.Questions), len(rec.Items))
	}
	it := rec.Items[4] // question 1, criterion 2
	if it.Key != (ItemKey{Record: "doc00.md#0", Question: 2, Item: 2}) || it.Weight != 2 || it.Name != "point 2" ||
		!strings.Contains(it.Text, "point 2 of question 1") {
		t.Fatalf("item 5: %+v", it)
	}
	if why := strings.Join(rec.Items[1].Why, "; "); !strings.Contains(why, "judge said invalid") {
		t.Errorf("criterion 2 of question 0 (judged invalid) looks fine: %q", why)
	}
	if why := strings.Join(rec.Items[2].Why, "; "); !strings.Contains(why, "no training signal") {
		t.Errorf("criterion 3 (its score never varies) looks fine: %q", why)
	}
}

// TestApplyGroundedDecisions: on export a rejected criterion is dropped
// with its scores, an edit replaces its description and weight (and the
// figures measured on the old text go), an edit of the weight alone keeps
// its scores scaled to the new weight, and accepted criteria are valid.
func TestApplyGroundedDecisions(t *testing.T) {
	recs := reviewtest.GroundedRecords(1)
	rec := recs[0]
	q0 := rec.Grounded.Questions[0]
	q1 := rec.Grounded.Questions[1]
	before := func(c schema.Criterion) *ItemState { return &ItemState{Text: c.Description, Weight: c.Weight} }
	d := decisions(stateOfEntries("alice",
		Entry{Time: t0, Reviewer: "alice", Record: rec.ID, Question: ptr32(0), Item: 1, Action: ActionReject, Before: before(q0.Criteria[0])},
		Entry{Time: t0, Reviewer: "alice", Record: rec.ID, Question: ptr32(0), Item: 2, Action: ActionEdit, Before: before(q0.Criteria[1]),
			After: &ItemState{Text: "The answer names stable storage.", Weight: 4}},
		Entry{Time: t0, Reviewer: "alice", Record: rec.ID, Question: ptr32(1), Item: 1, Action: ActionEdit, Before: before(q1.Criteria[0]),
			After: &ItemState{Text: q1.Criteria[0].Description, Weight: 6}},
		Entry{Time: t0, Reviewer: "alice", Record: rec.ID, Question: ptr32(1), Item: 3, Action: ActionAccept, Before: before(q1.Criteria[2])},
	))
	a, err := NewApplier(d, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Apply(&rec) {
		t.Fatal("the record was dropped")
	}
	g0, g1 := rec.Grounded.Questions[0], rec.Grounded.Questions[1]
	if len(g0.Criteria) != 2 || g0.Criteria[0].Description != "The answer names stable storage." || g0.Criteria[0].Weight != 4 ||
		g0.Criteria[0].ScoreMean != nil || g0.Criteria[0].Valid == nil || !*g0.Criteria[0].Valid {
		t.Fatalf("question 0 after a reject and an edit: %+v", g0.Criteria)
	}
	for _, ans := range g0.Answers {
		if len(ans.Scores) != 0 {
			t.Fatalf("question 0's answers keep scores %v measured on the old text", ans.Scores)
		}
	}
	if c := g1.Criteria[0]; c.Weight != 6 || c.ScoreMean == nil || g1.Answers[1].Scores[0] != 6 {
		t.Fatalf("a weight-only edit: criterion %+v, answer 1's scores %v; want its scores scaled to 6", c, g1.Answers[1].Scores)
	}
	if c := g1.Criteria[2]; c.Valid == nil || !*c.Valid || c.ValidReason == nil || !strings.Contains(*c.ValidReason, "accepted in review by alice") {
		t.Fatalf("the accepted criterion: %+v", c)
	}
	if s := a.Summary(); s.ItemsRejected != 1 || s.ItemsEdited != 2 || s.ItemsAccepted != 1 || s.Stale != 0 {
		t.Fatalf("summary %+v", s)
	}
}

// TestMixedCorpusLogsBesideEachCorpus: reviewing a math run and a grounded
// run together, each record's decisions go to the log beside its own
// corpus, under the fingerprint distill export checks for that corpus.
func TestMixedCorpusLogsBesideEachCorpus(t *testing.T) {
	dir := t.TempDir()
	grounded, math := filepath.Join(dir, "grounded"), filepath.Join(dir, "math")
	if err := reviewtest.GroundedRun(grounded, 2); err != nil {
		t.Fatal(err)
	}
	if err := reviewtest.DemoRun(math, 2); err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.Context(), []string{grounded, math}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Parts) != 2 || c.Parts[0].Dir != filepath.Join(grounded, "review") || c.Parts[1].Dir != filepath.Join(math, "review") {
		t.Fatalf("parts %+v", c.Parts)
	}
	if c.PartOf("r01") != 1 || c.PartOf("doc01.md#0") != 0 {
		t.Fatalf("r01 in part %d, doc01.md#0 in part %d", c.PartOf("r01"), c.PartOf("doc01.md#0"))
	}
	for i, p := range []string{grounded, math} {
		want := mustFingerprint(t, p)
		if c.Parts[i].Fingerprint != want {
			t.Errorf("part %d fingerprint %s; the corpus alone has %s", i, c.Parts[i].Fingerprint, want)
		}
	}
}

// TestSampleIsReproducible: --sample N --seed S reviews N records drawn
// by the seed: the same ones every time, others for another seed, and a
// larger N draws a superset.
func TestSampleIsReproducible(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 12); err != nil {
		t.Fatal(err)
	}
	ids := func(n int, seed uint64) []string {
		t.Helper()
		c, err := Open(t.Context(), []string{run}, Options{Sample: n, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Total != 12 {
			t.Fatalf("the sample says the corpus has %d records", c.Total)
		}
		out := c.Queue(Filter{}, Replay("x", nil)).IDs()
		slices.Sort(out)
		return out
	}
	a, b, other, more := ids(4, 7), ids(4, 7), ids(4, 8), ids(6, 7)
	if len(a) != 4 || !slices.Equal(a, b) || slices.Equal(a, other) {
		t.Fatalf("seed 7: %v then %v; seed 8: %v", a, b, other)
	}
	for _, id := range a {
		if !slices.Contains(more, id) {
			t.Fatalf("the sample of 6 %v lacks %s of the sample of 4", more, id)
		}
	}
}

func mustFingerprint(t *testing.T, path string) string {
	t.Helper()
	in, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := Fingerprint(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}
