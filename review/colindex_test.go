package review

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/schema"
)

// variedRun writes a run of n math records (synthcorpus's, with verdicts
// and satisfaction) and grounded ones, in shards of shardRows, with the
// shapes an index must read right: an item without verdicts, an empty
// rubric, rollouts without satisfaction verdicts and none at all, a
// grounded question without criteria and criteria without verdicts, two
// job fingerprints.
func variedRun(t testing.TB, dir string, n, shardRows int) {
	t.Helper()
	run, err := corpus.Open(dir, corpus.Options{ShardRows: shardRows})
	if err != nil {
		t.Fatal(err)
	}
	run.SetFingerprint("varied")
	o := synthcorpus.Options{Records: n, Rollouts: 4, Items: 7, Seed: 3}
	grounded := reviewtest.GroundedRecords(n/25 + 1)
	for i := range n {
		rec, _ := o.Record(i)
		switch i % 25 {
		case 3:
			rec.Rubric[1].Valid, rec.Rubric[1].EmpiricalValid = nil, nil
		case 5:
			rec.Rubric = []schema.Item{}
		case 8:
			for k := range rec.Rollouts {
				rec.Rollouts[k].Satisfaction = nil
			}
		case 11:
			rec.Rollouts = []schema.Rollout{}
		case 13:
			rec.Rollouts[2].Satisfaction = nil
			rec.Provenance.JobFingerprint = "another"
		case 17:
			rec = grounded[i/25]
			rec.ID = fmt.Sprintf("g%04d", i)
			switch i / 25 % 3 {
			case 1:
				rec.Grounded.Questions[1].Criteria = []schema.Criterion{}
			case 2:
				rec.Grounded.Questions[0].Criteria[2].Valid, rec.Grounded.Questions[0].Criteria[0].Varies = nil, nil
			}
		}
		if err := run.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIndexByColumnsIsTheIndexByRows: the index read from a run's Parquet
// columns is, entry by entry, the one decoded from its rows: ids, places,
// items' keys, types, verdict flags and risks, grounded criteria, the job
// fingerprints, across shards, pages and every shape of record.
func TestIndexByColumnsIsTheIndexByRows(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	variedRun(t, dir, 200, 140) // two shards, the first of two row groups
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Files) != 2 {
		t.Fatalf("%d shards; want 2", len(in.Files))
	}
	for i := range in.Files {
		var byCols, byRows []recEntry
		fps := map[string]bool{}
		ok, err := scanColumns(t.Context(), in, i, func(row *indexRow, ref audit.RowRef) {
			byCols = append(byCols, indexed(row, ref))
			fps[row.Provenance.JobFingerprint] = true
		})
		if !ok || err != nil {
			t.Fatalf("shard %d was not read by columns: %v", i, err)
		}
		err = audit.ScanFileAt(t.Context(), in, i, indexOfLabel, func(row *indexRow, ref audit.RowRef) error {
			byRows = append(byRows, indexed(row, ref))
			delete(fps, row.Provenance.JobFingerprint)
			return nil
		}, func(p audit.Problem) { t.Errorf("problem: %+v", p) })
		if err != nil {
			t.Fatal(err)
		}
		if len(byCols) != len(byRows) || len(byRows) == 0 {
			t.Fatalf("shard %d: %d entries by columns, %d by rows", i, len(byCols), len(byRows))
		}
		for k := range byRows {
			if !reflect.DeepEqual(byCols[k], byRows[k]) {
				t.Fatalf("shard %d row %d:\nby columns %+v\nby rows    %+v", i, k, byCols[k], byRows[k])
			}
		}
		if len(fps) != 0 {
			t.Errorf("shard %d: job fingerprints read by columns only: %v", i, fps)
		}
	}
	c, err := Open(t.Context(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Len() != 200 || len(c.Problems) != 0 {
		t.Fatalf("%d records, problems %v", c.Len(), c.Problems)
	}
	rec, err := c.Record(t.Context(), "g0067")
	if err != nil || len(rec.Items) != 6 {
		t.Fatalf("grounded record g0067: %+v, %v", rec, err)
	}
}

// indexed is the index entry of row, with what scanFiles adds.
func indexed(row *indexRow, ref audit.RowRef) recEntry {
	e := entryOf(row, 0, ref)
	e.id, e.grounded = row.ID, row.Grounded != nil
	return e
}

// FuzzIndexByColumns: a damaged shard read by columns is an error or
// rows, never a panic; what it reads is what its rows decode to (or the
// rows do not decode either), so that the index never holds what a
// record does not say.
func FuzzIndexByColumns(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "run")
	variedRun(f, dir, 30, 30)
	shards, err := corpus.Shards(dir)
	if err != nil || len(shards) != 1 {
		f.Fatalf("shards %v, %v", shards, err)
	}
	good, err := os.ReadFile(shards[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	for _, at := range []int{4, 100, len(good) / 3, len(good) / 2, len(good) - 40} {
		bad := slices.Clone(good)
		bad[at] ^= 0x5a
		f.Add(bad)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := audit.Open(path)
		if err != nil {
			return
		}
		var byCols, byRows []recEntry
		ok, err := scanColumns(t.Context(), in, 0, func(row *indexRow, ref audit.RowRef) { byCols = append(byCols, indexed(row, ref)) })
		if !ok || err != nil {
			return
		}
		bad := false
		err = audit.ScanFileAt(t.Context(), in, 0, indexOfLabel, func(row *indexRow, ref audit.RowRef) error {
			byRows = append(byRows, indexed(row, ref))
			return nil
		}, func(audit.Problem) { bad = true })
		if err != nil || bad {
			return
		}
		if !reflect.DeepEqual(byCols, byRows) {
			t.Fatalf("read by columns %d entries, by rows %d, and they differ", len(byCols), len(byRows))
		}
	})
}
