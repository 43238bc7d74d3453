package corpus

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// TestRowReader: a row is read by its index, only the columns of T, out
// of order and again; an index past the end is an error naming it, never
// a panic.
func TestRowReader(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	r, err := Open(dir, Options{ShardRows: 300, RowGroupRows: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		rec := schema.Record{ID: idOf(i), Style: schema.StyleSRaR, Problem: strings.Repeat("p", i), Rubric: []schema.Item{}, Rollouts: []schema.Rollout{},
			Provenance: schema.Provenance{SpecVersion: schema.SpecVersion, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
		if err := r.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	shards, err := Shards(dir)
	if err != nil || len(shards) != 1 {
		t.Fatalf("shards %v, %v", shards, err)
	}
	type idOnly struct {
		ID      string `parquet:"id"`
		Problem string `parquet:"problem"`
	}
	rr, err := OpenRows[idOnly](shards[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	for _, i := range []int64{150, 3, 199, 0, 150, 17} {
		row, err := rr.Read(i)
		if err != nil || row.ID != idOf(int(i)) || len(row.Problem) != int(i) {
			t.Fatalf("row %d: %+v, %v", i, row, err)
		}
	}
	if _, err := rr.Read(200); err == nil || !strings.Contains(err.Error(), "no row 200") {
		t.Fatalf("row 200 of 200: %v", err)
	}
}

func idOf(i int) string { return fmt.Sprintf("rec%04d", i) }
