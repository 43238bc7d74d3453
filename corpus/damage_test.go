package corpus

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// damages are the ways a listed shard goes bad on disk after its commit.
var damages = []struct {
	name   string
	damage func(t *testing.T, path string)
}{
	{"flipped bytes mid-file", func(t *testing.T, path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(data) / 2; i < len(data)/2+8; i++ {
			data[i] ^= 0x5a
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}},
	{"truncated", func(t *testing.T, path string) {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, st.Size()-100); err != nil {
			t.Fatal(err)
		}
	}},
	{"missing", func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}},
}

// damagedRun makes a finished run of 60 records in 3 shards and damages shard 1.
func damagedRun(t *testing.T, damage func(t *testing.T, path string)) (dir string, manifest []byte) {
	t.Helper()
	dir = t.TempDir()
	r := openRun(t, dir, Options{ShardRows: 20, ToolVersion: "v1.0.0"})
	appendAll(t, r, genRecords(10, 0, 60))
	closeRun(t, r)
	damage(t, shardPath(dir, 1))
	manifest, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return dir, manifest
}

// TestDamagedListedShardIsNeverAccepted: a listed shard whose bytes no
// longer match its manifest entry stops Open with an error that names it and
// says how to recover, and its new hash never reaches the manifest. Before,
// a shard with flipped bytes whose id column still read was "re-listed".
func TestDamagedListedShardIsNeverAccepted(t *testing.T) {
	t.Parallel()
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir, before := damagedRun(t, d.damage)
			r, err := Open(dir, Options{ShardRows: 20, Logger: quietLogger()})
			if err == nil {
				r.Close()
				t.Fatal("Open accepted a damaged shard")
			}
			if !errors.Is(err, ErrDamaged) {
				t.Errorf("error does not wrap ErrDamaged: %v", err)
			}
			for _, want := range []string{"shards/part-00001.parquet", "distill repair"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			after, _ := os.ReadFile(filepath.Join(dir, ManifestName))
			if !bytes.Equal(before, after) {
				t.Errorf("the manifest changed:\n%s\nwas\n%s", after, before)
			}
			// A second attempt fails the same way: nothing was accepted.
			if r, err := Open(dir, Options{ShardRows: 20, Logger: quietLogger()}); err == nil {
				r.Close()
				t.Fatal("the second Open accepted the damaged shard")
			}
			if _, err := Export(context.Background(), dir, quietExportOptions(FormatJSONL, filepath.Join(t.TempDir(), "exp"))); !errors.Is(err, ErrDamaged) {
				t.Errorf("export of a damaged run: %v", err)
			}
			damaged, err := CheckShards(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(damaged) != 1 || damaged[0].File != "shards/part-00001.parquet" {
				t.Errorf("CheckShards = %+v, want shard 1", damaged)
			}
		})
	}
}

// TestRepairMovesDamagedShardsAside: Repair moves a damaged shard into
// shards/broken/ and unlists it, keeping every other record; the run then
// opens with the damaged shard's ids not done, so the next run makes them
// again (from the response cache, tested in pipeline).
func TestRepairMovesDamagedShardsAside(t *testing.T) {
	t.Parallel()
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir, _ := damagedRun(t, d.damage)
			res, err := Repair(dir, Options{Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Damaged) != 1 || res.Damaged[0].File != "shards/part-00001.parquet" || res.RowsLost != 20 {
				t.Fatalf("repair = %+v", res)
			}
			if d.name != "missing" {
				if _, err := os.Stat(filepath.Join(dir, shardsDir, brokenDir, shardName(1))); err != nil {
					t.Errorf("damaged shard not moved aside: %v", err)
				}
			}
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Shards) != 2 || m.Rows != 40 || m.ToolVersion != "v1.0.0" {
				t.Errorf("manifest after repair: %d shards, %d rows, tool %q", len(m.Shards), m.Rows, m.ToolVersion)
			}
			if n := m.Jobs; len(n) > 0 && n[0].Records != 40 {
				t.Errorf("job records after repair %d, want 40", n[0].Records)
			}
			r := openRun(t, dir, Options{ShardRows: 20})
			all := genRecords(10, 0, 60)
			for i, rec := range all {
				if got, want := r.Done(rec.ID), i < 20 || i >= 40; got != want {
					t.Errorf("record %d done %v, want %v", i, got, want)
				}
			}
			// Redoing the lost records makes a whole corpus again.
			appendAll(t, r, all[20:40])
			closeRun(t, r)
			if got := readAll(t, dir); len(got) != 60 {
				t.Errorf("%d records after redoing, want 60", len(got))
			}
			if damaged, err := CheckShards(dir); err != nil || len(damaged) != 0 {
				t.Errorf("CheckShards after repair = %v, %v", damaged, err)
			}
			// A repair of a healthy run changes nothing.
			res, err = Repair(dir, Options{Logger: quietLogger()})
			if err != nil || len(res.Damaged) != 0 {
				t.Errorf("second repair = %+v, %v", res, err)
			}
		})
	}
}

// TestCompactKeepsToolVersion: compaction, which makes no records, keeps the
// tool version of the run that made them.
func TestCompactKeepsToolVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRun(t, dir, Options{ShardRows: 20, ToolVersion: "v1.0.0"})
	for i := range 4 {
		appendAll(t, r, genRecords(3, i*5, 5))
		if err := r.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	closeRun(t, r)
	r = openRun(t, dir, Options{ShardRows: 20})
	if _, err := r.Compact(); err != nil {
		t.Fatal(err)
	}
	closeRun(t, r)
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.ToolVersion != "v1.0.0" || len(m.Shards) != 1 {
		t.Errorf("after compact: tool %q, %d shards", m.ToolVersion, len(m.Shards))
	}
}
