package corpus

import (
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
