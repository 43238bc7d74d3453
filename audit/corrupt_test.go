package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
)

// TestCorruptRun damages one shard of a run in each way a corpus gets
// damaged, and checks the audit names the file and the fault, audits the
// other shards, and never panics.
func TestCorruptRun(t *testing.T) {
	t.Parallel()
	recs := corpusfix.Records()[:30]
	shard := func(dir string, i int) string {
		return filepath.Join(dir, "shards", "part-0000"+string(rune('0'+i))+".parquet")
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		says   []string
		read   int64 // records still audited
	}{
		{"truncated shard", func(t *testing.T, dir string) {
			data, _ := os.ReadFile(shard(dir, 1))
			os.WriteFile(shard(dir, 1), data[:len(data)/2], 0o644)
		}, []string{"part-00001.parquet", "not a readable parquet file", "bytes, the listing says"}, 20},
		{"another schema", func(t *testing.T, dir string) {
			type other struct {
				Question string `parquet:"question"`
			}
			if err := parquet.WriteFile(shard(dir, 2), []other{{"q"}}); err != nil {
				t.Fatal(err)
			}
		}, []string{"part-00002.parquet", "has no column"}, 20},
		{"listed shard missing", func(t *testing.T, dir string) { os.Remove(shard(dir, 0)) },
			[]string{"part-00000.parquet", "listed but cannot be opened"}, 20},
		{"garbage bytes", func(t *testing.T, dir string) {
			st, _ := os.Stat(shard(dir, 1))
			os.WriteFile(shard(dir, 1), []byte(strings.Repeat("x", int(st.Size()))), 0o644)
		}, []string{"part-00001.parquet", "bad magic"}, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			corpusfix.WriteRun(t, dir, recs, 10)
			tt.damage(t, dir)
			rep := auditPath(t, Options{}, dir)
			if len(rep.InputProblems) != 1 {
				t.Fatalf("input problems %+v; want one", rep.InputProblems)
			}
			p := rep.InputProblems[0]
			for _, s := range tt.says {
				if !strings.Contains(p.File+" "+p.Error, s) {
					t.Errorf("problem %q does not say %q", p.File+": "+p.Error, s)
				}
			}
			if rep.Corpus.Records != tt.read || rep.Corpus.FilesRead != 2 {
				t.Errorf("audited %d records from %d files; want %d from 2", rep.Corpus.Records, rep.Corpus.FilesRead, tt.read)
			}
			if len(rep.Damage()) == 0 {
				t.Error("Damage() is empty")
			}
		})
	}
}

// TestCorruptManifest: a manifest that does not parse is an error of
// Open, not a usage error.
func TestCorruptManifest(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:3], 10)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"shards": [`), 0o644)
	_, err := Open(dir)
	if err == nil || IsUsage(err) || !strings.Contains(err.Error(), "manifest") {
		t.Errorf("Open: %v; want a manifest error that is not a usage error", err)
	}
}

// TestCorruptFileGivenAlone: a damaged shard named on its own is damage
// (not "not auditable"), named with its path.
func TestCorruptFileGivenAlone(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, corpusfix.Records()[:3], 10)
	path := filepath.Join(dir, "shards", "part-00000.parquet")
	data, _ := os.ReadFile(path)
	cut := filepath.Join(t.TempDir(), "cut.parquet")
	os.WriteFile(cut, data[:len(data)-100], 0o644)
	_, err := Open(cut)
	if err == nil || IsUsage(err) || !strings.Contains(err.Error(), cut) {
		t.Errorf("Open(truncated shard): %v; want damage naming the file", err)
	}
	if _, err := Open(path); err != nil {
		t.Errorf("Open(good shard): %v", err)
	}
	foreign := filepath.Join(t.TempDir(), "rar.parquet")
	type rarRow struct {
		Question string `parquet:"question"`
	}
	parquet.WriteFile(foreign, []rarRow{{"q"}})
	if _, err := Open(foreign); !errors.Is(err, ErrNotAuditable) {
		t.Errorf("Open(a rar file): %v; want ErrNotAuditable", err)
	}
}

// TestUnreadableLabel: a verl row whose label is not JSON is listed with
// its row, the other rows audited.
func TestUnreadableLabel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs := corpusfix.Records()[:4]
	writeVerlExport(t, dir, recs, false)
	path := filepath.Join(dir, "data", "train-00000-of-00001.parquet")
	rows, err := parquet.ReadFile[verlRow](path)
	if err != nil {
		t.Fatal(err)
	}
	rows[1].Label = "{not json"
	if err := parquet.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
	writeExport(t, dir, "verl", map[string]int64{"data/train-00000-of-00001.parquet": int64(len(rows)), "data/validation-00000-of-00001.parquet": 1}, false)
	rep := auditPath(t, Options{}, dir)
	if len(rep.InputProblems) != 1 || rep.InputProblems[0].Line != 2 || !strings.Contains(rep.InputProblems[0].Error, "label") {
		t.Fatalf("input problems %+v; want row 2's label", rep.InputProblems)
	}
	if rep.Corpus.Records != int64(len(recs)-1) {
		t.Errorf("%d records audited, want %d", rep.Corpus.Records, len(recs)-1)
	}
}
