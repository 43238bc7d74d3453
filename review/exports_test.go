package review

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
)

// TestReviewExports: a jsonl and a verl export are reviewed like their
// run: the same records and fingerprint, each record read whole when
// shown (a JSONL line by its offset, a verl row by its index); a verl
// export of a grounded run shows each question of a passage as a record
// of its own, whose criteria's decisions name the passage's record, so
// that they apply to the run.
func TestReviewExports(t *testing.T) {
	dir := t.TempDir()
	run, grounded := filepath.Join(dir, "run"), filepath.Join(dir, "grounded")
	if err := reviewtest.DemoRun(run, 3); err != nil {
		t.Fatal(err)
	}
	if err := reviewtest.GroundedRun(grounded, 2); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{corpus.FormatJSONL, corpus.FormatVerl} {
		out := filepath.Join(dir, "export-"+format)
		if _, err := corpus.Export(t.Context(), run, corpus.ExportOptions{Format: format, Out: out}); err != nil {
			t.Fatal(err)
		}
		c, err := Open(t.Context(), []string{out}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.Record(t.Context(), "r02")
		if err != nil || c.Len() != 3 || rec.Problem == "" || len(rec.Items) != 5 || rec.Items[4].Type != "ANSWER" {
			t.Fatalf("%s: %d records; r02: %+v, %v", format, c.Len(), rec, err)
		}
		if c.Parts[0].Fingerprint != mustFingerprint(t, run) {
			t.Errorf("%s: fingerprint %s; the run's is %s", format, c.Parts[0].Fingerprint, mustFingerprint(t, run))
		}
		c.Close()
	}
	out := filepath.Join(dir, "grounded-verl")
	if _, err := corpus.Export(t.Context(), grounded, corpus.ExportOptions{Format: corpus.FormatVerl, Out: out}); err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.Context(), []string{out}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Len() != 4 || !c.Has("doc01.md#0-q1") {
		t.Fatalf("%d records in the grounded verl export; want its 4 questions", c.Len())
	}
	rec, err := c.Record(t.Context(), "doc01.md#0-q1")
	if err != nil || len(rec.Items) != 3 || rec.Items[0].Key != (ItemKey{Record: "doc01.md#0", Question: 2, Item: 1}) {
		t.Fatalf("question 1 of doc01: %+v, %v", rec, err)
	}
	l, err := OpenLog(LogPath(out, "alice"), "alice", c.Parts[0].Fingerprint, out, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := NewSession(c, []*Log{l})
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := s.DecideItem(t.Context(), rec.ID, rec.Items[0].Key, ItemDecision{Action: ActionAccept}, time.Now())
	if err != nil || e.Record != "doc01.md#0" || e.Question == nil || *e.Question != 1 {
		t.Fatalf("the decision %+v, %v; want it on the passage's record, question 1", e, err)
	}
	if r, _ := s.Progress(); r != 1 {
		t.Fatalf("progress %d; want the decided criterion counted", r)
	}
}
