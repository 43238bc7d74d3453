package corpus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// runOf writes recs into a run directory in the given order, committing
// after every cut records: the shards a run's checkpoints leave, whose id
// ranges overlap.
func runOf(t *testing.T, dir string, recs []schema.Record, order []int, cut, shardRows int) {
	t.Helper()
	r := openRun(t, dir, Options{ShardRows: shardRows, ToolVersion: "test"})
	for n, i := range order {
		rec := recs[i]
		if err := r.Append(&rec); err != nil {
			t.Fatal(err)
		}
		if (n+1)%cut == 0 {
			if err := r.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	closeRun(t, r)
}

// TestExportIsTheSameBytesWhateverTheShards: two runs of one job whose
// problems finished in different orders (so their shards split the ids
// differently) export the same bytes, rows in global id order.
func TestExportIsTheSameBytesWhateverTheShards(t *testing.T) {
	t.Parallel()
	recs := genRecords(5, 0, 24)
	if len(recs) <= maxMergeFanIn {
		t.Fatalf("run c's %d one-record shards must be more than maxMergeFanIn (%d)", len(recs), maxMergeFanIn)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := rng.Perm(len(recs)), rng.Perm(len(recs))
	root := t.TempDir()
	runOf(t, filepath.Join(root, "a"), recs, a, 5, 1000)
	runOf(t, filepath.Join(root, "b"), recs, b, 7, 1000)
	runOf(t, filepath.Join(root, "c"), recs, b, 1, 1000) // 24 shards: merged in rounds (more than maxMergeFanIn)
	for _, format := range []string{FormatJSONL, FormatRaR} {
		var data [3]map[string][]byte
		for k, run := range []string{"a", "b", "c"} {
			out := filepath.Join(root, "exp-"+format+"-"+run)
			if _, err := Export(context.Background(), filepath.Join(root, run), quietExportOptions(format, out)); err != nil {
				t.Fatal(err)
			}
			data[k] = dirFiles(t, filepath.Join(out, exportDataDir))
		}
		if len(data[0]) == 0 || len(data[0]) != len(data[1]) {
			t.Fatalf("%s: %d and %d data files", format, len(data[0]), len(data[1]))
		}
		for name, want := range data[0] {
			if !bytes.Equal(data[1][name], want) || !bytes.Equal(data[2][name], want) {
				t.Errorf("%s: %s differs between runs of one job", format, name)
			}
		}
		for _, run := range []string{"a", "b", "c"} {
			if left, _ := filepath.Glob(filepath.Join(root, "exp-"+format+"-"+run, exportDataDir, ".merge-*")); len(left) > 0 {
				t.Errorf("temporary merge files left: %v", left)
			}
		}
	}
	ids := exportedIDs(t, filepath.Join(root, "exp-jsonl-a"))
	for split, got := range ids {
		if !slices.IsSorted(got) {
			t.Errorf("split %s is not in id order: %v", split, got)
		}
	}
}

// TestExportDropsRepeatedIDs: a record whose id is already in an earlier
// shard is exported once, the first (as rewardd's index keeps it), and
// counted.
func TestExportDropsRepeatedIDs(t *testing.T) {
	t.Parallel()
	for _, cut := range []int{3, 1} { // 8 shards, and 24 (merged in rounds: more than maxMergeFanIn)
		t.Run(fmt.Sprint("cut ", cut), func(t *testing.T) { exportDropsRepeatedIDs(t, cut) })
	}
}

func exportDropsRepeatedIDs(t *testing.T, cut int) {
	const n = 24
	if cut == 1 && n <= maxMergeFanIn {
		t.Fatalf("%d one-record shards must be more than maxMergeFanIn (%d)", n, maxMergeFanIn)
	}
	recs := genRecords(5, 0, n)
	dir := filepath.Join(t.TempDir(), "run")
	runOf(t, dir, recs, rand.New(rand.NewPCG(3, 4)).Perm(n), cut, 1000)
	// A later shard repeats two ids with other content (an older tool, a
	// hand-merged corpus): the manifest lists it.
	dup := []schema.Record{recs[3], recs[11]}
	for i := range dup {
		dup[i].Problem = "a second copy"
	}
	slices.SortFunc(dup, func(x, y schema.Record) int { return cmpString(x.ID, y.ID) })
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := writeShard(fsys.OS, dir, 99, dup, writerOptions(Options{RowGroupRows: 128}))
	if err != nil {
		t.Fatal(err)
	}
	m.Shards = append(m.Shards, info)
	m.Rows += info.Rows
	writeManifestForTest(t, dir, m)

	out := filepath.Join(t.TempDir(), "exp")
	em, err := Export(context.Background(), dir, quietExportOptions(FormatJSONL, out))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, lines := range exportedRecords(t, out) {
		for _, rec := range lines {
			if _, ok := seen[rec.ID]; ok {
				t.Errorf("id %s exported twice", rec.ID)
			}
			seen[rec.ID] = rec.Problem
		}
	}
	if len(seen) != n || seen[recs[3].ID] != recs[3].Problem || seen[recs[11].ID] != recs[11].Problem {
		t.Errorf("%d ids exported; the repeated ones hold %q, %q", len(seen), seen[recs[3].ID], seen[recs[11].ID])
	}
	if em.RecordsOut != n || em.DuplicatesDropped != 2 {
		t.Errorf("export.json: %d out, %d duplicates dropped; want %d, 2", em.RecordsOut, em.DuplicatesDropped, n)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// exportedRecords reads a jsonl export's data files by name.
func exportedRecords(t *testing.T, out string) map[string][]schema.Record {
	t.Helper()
	got := map[string][]schema.Record{}
	files, _ := filepath.Glob(filepath.Join(out, exportDataDir, "*.jsonl"))
	slices.Sort(files)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var rec schema.Record
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			got[filepath.Base(f)] = append(got[filepath.Base(f)], rec)
		}
		fh.Close()
	}
	return got
}

func exportedIDs(t *testing.T, out string) map[string][]string {
	ids := map[string][]string{}
	for name, recs := range exportedRecords(t, out) {
		for _, r := range recs {
			ids[name] = append(ids[name], r.ID)
		}
	}
	return ids
}
