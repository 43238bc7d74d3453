package corpus

import (
	"errors"

	"github.com/parquet-go/parquet-go"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// spec2Run is a run directory written by the tool at spec version 2
// (commit 605d1a9, before the grounded column): 12 problems, 2 shards.
const spec2Run = "testdata/spec2-run"

// TestSpec2CorpusStaysReadable: the shards of a spec-2 run read as records
// (Grounded nil, every other field as written), and Verify accepts the run.
func TestSpec2CorpusStaysReadable(t *testing.T) {
	t.Parallel()
	m, err := ReadManifest(spec2Run)
	if err != nil || m.SpecVersion != "2" {
		t.Fatalf("fixture manifest: %+v %v", m.SpecVersion, err)
	}
	var recs []*schema.Record
	if err := ReadAll(spec2Run, func(r *schema.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatalf("reading a spec-2 run: %v", err)
	}
	if int64(len(recs)) != m.Rows || len(recs) == 0 {
		t.Fatalf("read %d records, the manifest lists %d", len(recs), m.Rows)
	}
	for _, r := range recs {
		if r.Grounded != nil || r.Style != schema.StyleSRaR || len(r.Rubric) == 0 || len(r.Rollouts) != 4 ||
			r.Provenance.SpecVersion != "2" || r.Problem == "" {
			t.Errorf("record %s read wrong: style %q, %d items, %d rollouts, spec %q, grounded %v", r.ID, r.Style, len(r.Rubric), len(r.Rollouts), r.Provenance.SpecVersion, r.Grounded)
		}
	}
	if _, err := Verify(spec2Run); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// TestSpec2RunIsNotResumed: opening a spec-2 run to add to it is refused
// with a message that says its records stay readable and how to go on.
func TestSpec2RunIsNotResumed(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(spec2Run)); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if err == nil {
		t.Fatal("a spec-2 run was opened for writing")
	}
	for _, want := range []string{"written with record spec 2", "stay readable", "--cache " + filepath.Join(dir, "cache.db")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if m, err := ReadManifest(dir); err != nil || m.SpecVersion != "2" {
		t.Errorf("the refused run's manifest changed: spec %q, %v", m.SpecVersion, err)
	}
}

// TestSpec3ShardWithoutOpenBookAnswersStaysReadable: a shard written before
// the grounded questions' open_book_answers column reads whole (the
// closed-book answers as written, OpenBookAnswers empty), through the
// record reader and through a projection holding the grounded payload.
func TestSpec3ShardWithoutOpenBookAnswersStaysReadable(t *testing.T) {
	t.Parallel()
	q := groundedQuestionV3Closed{Index: 0, Question: "Why?", Criteria: []schema.Criterion{{ID: "c1", Weight: 2, Name: "n"}},
		Answers: []schema.GroundedAnswer{{Index: 0, Text: "a0", Scores: []float64{2}}, {Index: 1, Text: "a1", Scores: []float64{0}}}}
	old := []recordV3Closed{
		{recordV2: recordV2{ID: "d#0", Style: schema.StyleGrounded}, Grounded: &groundedV3Closed{DocID: "d", Passage: "p", Questions: []groundedQuestionV3Closed{q, {Index: 1, Question: "How?"}}}},
		{recordV2: recordV2{ID: "m1", Style: schema.StyleSRaR}},
	}
	path := filepath.Join(t.TempDir(), "shard-00000.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[recordV3Closed](f)
	if _, err := w.Write(old); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	var recs []*schema.Record
	if err := ScanShard(path, func(r *schema.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatalf("reading a shard without open_book_answers: %v", err)
	}
	type projection struct {
		ID       string           `parquet:"id"`
		Grounded *schema.Grounded `parquet:"grounded,optional"`
	}
	var projected []*schema.Grounded
	if err := Scan(path, func(p *projection) error { projected = append(projected, p.Grounded); return nil }); err != nil {
		t.Fatalf("projecting a shard without open_book_answers: %v", err)
	}
	if len(recs) != 2 || recs[1].Grounded != nil || len(projected) != 2 {
		t.Fatalf("read %d records (%d projected); the math record's grounded: %v", len(recs), len(projected), recs[1].Grounded)
	}
	for _, g := range []*schema.Grounded{recs[0].Grounded, projected[0]} {
		if g == nil || len(g.Questions) != 2 || g.Questions[1].Question != "How?" {
			t.Fatalf("grounded payload read wrong: %+v", g)
		}
		got := g.Questions[0]
		if len(got.Answers) != 2 || got.Answers[1].Text != "a1" || got.Answers[0].Scores[0] != 2 || len(got.OpenBookAnswers) != 0 || len(g.Questions[1].OpenBookAnswers) != 0 {
			t.Errorf("question read wrong: answers %+v, open-book %+v", got.Answers, got.OpenBookAnswers)
		}
	}
}

// TestShardWithoutPanelStaysReadable: a shard written before judge panels
// (no panel column) reads with Record.Panel nil and every other field as
// written; a record with a panel reads back with every judge's verdicts.
func TestShardWithoutPanelStaysReadable(t *testing.T) {
	t.Parallel()
	valid := true
	old := []recordV3Single{
		{recordV2: recordV2{ID: "m1", Style: schema.StyleSRaR, Rubric: []schema.Item{{ID: 1, Type: "SUGGEST", Text: "t", Valid: &valid}}}},
		{recordV2: recordV2{ID: "m2", Style: schema.StyleSRaR}},
	}
	path := filepath.Join(t.TempDir(), "shard-00000.parquet")
	writeShardOf(t, path, old)
	var recs []*schema.Record
	if err := ScanShard(path, func(r *schema.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatalf("reading a shard without the panel column: %v", err)
	}
	if len(recs) != 2 || recs[0].Panel != nil || len(recs[0].Rubric) != 1 || recs[0].Rubric[0].Valid == nil || !*recs[0].Rubric[0].Valid {
		t.Fatalf("read %+v", recs)
	}
	// A projection with today's provenance (the judges' seeds) reads it too.
	type head struct {
		ID         string            `parquet:"id"`
		Provenance schema.Provenance `parquet:"provenance"`
	}
	var heads []head
	if err := Scan(path, func(h *head) error { heads = append(heads, *h); return nil }); err != nil || len(heads) != 2 || heads[0].Provenance.JudgeSeed != nil {
		t.Fatalf("projecting provenance of a shard without the judges' seeds: %v %+v", err, heads)
	}

	no := false
	seed := int64(7)
	withPanel := []schema.Record{{ID: "m1", Style: schema.StyleSRaR, Panel: &schema.Panel{
		Judges:   []schema.PanelMember{{Name: "a", Stage: "judge", Model: "m-a"}, {Name: "b", Stage: "judge"}, {Name: "c", Stage: "judge"}},
		Validity: []schema.ItemVerdicts{{ItemID: 1, Verdicts: []schema.JudgeVerdict{{Judge: "a", Valid: &valid, Reason: "ok"}, {Judge: "b", Valid: &no, Reason: "vague"}, {Judge: "c", Reason: "reply did not parse"}}}},
		Satisfaction: []schema.RolloutVerdicts{{Rollout: 0, Judges: []schema.JudgeSatisfaction{
			{Judge: "a", Satisfaction: []schema.Satisfaction{{ID: 1, Satisfied: true, Step: 2}}}, {Judge: "b", Failed: true}}}},
		OrderSeed: &seed,
	}}}
	path2 := filepath.Join(t.TempDir(), "shard-00000.parquet")
	writeShardOf(t, path2, withPanel)
	recs = nil
	if err := ScanShard(path2, func(r *schema.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatalf("reading a shard with a panel: %v", err)
	}
	p := recs[0].Panel
	if p == nil || len(p.Judges) != 3 || len(p.Validity) != 1 || p.Validity[0].Verdicts[2].Valid != nil || *p.Validity[0].Verdicts[1].Valid ||
		len(p.Satisfaction) != 1 || !p.Satisfaction[0].Judges[1].Failed || p.Satisfaction[0].Judges[0].Satisfaction[0].Step != 2 || p.OrderSeed == nil || *p.OrderSeed != 7 {
		t.Fatalf("panel read back wrong: %+v", p)
	}
}

func writeShardOf[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
}
