package corpus

import (
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestScanProvenanceOfAnOlderShard: a reader of provenance (as validate's
// is) reads shards written before the judges' seeds joined it, their seeds
// nil.
func TestScanProvenanceOfAnOlderShard(t *testing.T) {
	t.Parallel()
	type row struct {
		ID         string            `parquet:"id"`
		Provenance schema.Provenance `parquet:"provenance"`
	}
	shards, err := filepath.Glob(filepath.Join("testdata", "spec2-run", "shards", "*.parquet"))
	if err != nil || len(shards) == 0 {
		t.Fatalf("no spec-2 shards: %v", err)
	}
	n := 0
	err = Scan(shards[0], func(r *row) error {
		n++
		if r.Provenance.JudgeSeed != nil || r.Provenance.EmpiricalSeed != nil || r.Provenance.RolloutModel == "" {
			t.Errorf("%s: provenance %+v, want the seeds nil and the rest read", r.ID, r.Provenance)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("scanning %s: %d rows, %v", shards[0], n, err)
	}
}
