package audit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

type itemKey struct {
	record string
	item   int32
}

func sampled(t *testing.T, dir string, n int, seed uint64, judgedOnly bool) ([]itemKey, int64) {
	t.Helper()
	in, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	items, eligible, problems, err := Sample(context.Background(), in, n, seed, judgedOnly)
	if err != nil || len(problems) > 0 {
		t.Fatalf("Sample: %v %v", err, problems)
	}
	out := make([]itemKey, len(items))
	for i, it := range items {
		if judgedOnly && it.Stored == nil {
			t.Errorf("unjudged item %s/%d drawn", it.RecordID, it.ItemID)
		}
		out[i] = itemKey{it.RecordID, it.ItemID}
	}
	return out, eligible
}

// TestSampleReproducible: the draw depends on the seed and the items only,
// not on how the corpus is cut into shards or in which order it is read.
func TestSampleReproducible(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()[:30]
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	corpusfix.WriteRun(t, a, recs, 4)
	rev := slices.Clone(recs)
	slices.Reverse(rev)
	corpusfix.WriteRun(t, b, rev, 11)

	s1, eligible := sampled(t, a, 25, 1, true)
	s2, _ := sampled(t, b, 25, 1, true)
	t.Logf("seed 1 draws %v", s1[:5])
	if !slices.Equal(s1, s2) {
		t.Errorf("the same seed drew differently from differently sharded copies:\n%v\n%v", s1, s2)
	}
	if len(s1) != 25 || eligible == 0 {
		t.Fatalf("drew %d of %d", len(s1), eligible)
	}
	s3, _ := sampled(t, a, 25, 2, true)
	if slices.Equal(s1, s3) {
		t.Error("seeds 1 and 2 drew the same items")
	}
	big, _ := sampled(t, a, 60, 1, true)
	for _, k := range s1 {
		if !slices.Contains(big, k) {
			t.Errorf("a larger sample does not contain %v", k)
		}
	}
	all, n := sampled(t, a, 100000, 1, false)
	if int64(len(all)) != n || n <= eligible {
		t.Errorf("all items: drew %d of %d (judged: %d)", len(all), n, eligible)
	}
}

// TestSampleSkipsDuplicates: a repeated record is drawn from once.
func TestSampleSkipsDuplicates(t *testing.T) {
	t.Parallel()
	dir := sharedGoldenRun(t) // p005 is in two shards
	keys, _ := sampled(t, dir, 100000, 3, false)
	seen := map[itemKey]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Fatalf("%v drawn twice", k)
		}
		seen[k] = true
	}
}

func FuzzScanJSONL(f *testing.F) {
	f.Add([]byte("{\"id\":\"a\",\"rubric\":[{\"id\":1,\"type\":\"SUGGEST\",\"text\":\"x\"}]}\n\n{bad\n"))
	f.Add([]byte("{\"id\":\"b\"}"))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte("{\"rollouts\":[{\"satisfaction\":[{\"item_id\":1}]}]}\r\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var good, bad int64
		a := newAcc(&settings{maxItems: 12, list: 10}, 0, path)
		rows, err := scanJSONL(path, func(r *row, n int64) error { good++; a.add(r, n); return nil }, func(Problem) { bad++ })
		if err != nil {
			t.Fatalf("scanJSONL: %v", err)
		}
		if rows != good+bad || a.records != good {
			t.Fatalf("rows %d, good %d, bad %d, audited %d", rows, good, bad, a.records)
		}
	})
}
