package pipeline

import (
	"fmt"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// idRow is the one column of a shard checkAccounted needs.
type idRow struct {
	ID string `parquet:"id"`
}

// corpusIDs returns the ids of the records of the run directory dir, read
// from the id column of each shard its manifest lists (the rest of a
// record is not decoded): it fails the test on an id in the shards twice,
// or a shard whose rows are not the manifest's count, as
// runtest.ReadCorpus does.
func corpusIDs(t testing.TB, dir string) map[string]bool {
	t.Helper()
	m, err := corpus.ReadManifest(dir)
	if err != nil {
		t.Fatalf("reading corpus: %v", err)
	}
	files, err := corpus.Shards(dir)
	if err != nil {
		t.Fatalf("reading corpus: %v", err)
	}
	ids := map[string]bool{}
	for i, f := range files {
		var rows int64
		err := corpus.Scan(f, func(r *idRow) error {
			rows++
			if ids[r.ID] {
				return fmt.Errorf("id %s appears twice in the shards", r.ID)
			}
			ids[r.ID] = true
			return nil
		})
		if err == nil && rows != m.Shards[i].Rows {
			err = fmt.Errorf("shard %s has %d rows, the manifest says %d", m.Shards[i].File, rows, m.Shards[i].Rows)
		}
		if err != nil {
			t.Fatalf("reading corpus: %v", err)
		}
	}
	return ids
}
