package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/refine"
)

// TestRefineKilledStartsOver kills a real distill refine process once it
// has committed shards into its work directory, and checks that --out does
// not exist (nothing reads as a corpus there), that the same command then
// finishes, and that what it writes is what a refine never killed writes.
// Every refine runs as the built command (a refine of the whole corpus
// in-process, under the race detector, cost this test most of its 56 s of
// CPU; refine's own tests run it under the race detector).
func TestRefineKilledStartsOver(t *testing.T) {
	t.Parallel()
	bin := buildDistill(t)
	const records = 1000
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := synthcorpus.Write(src, synthcorpus.Options{Records: records, Seed: 7, ShardRows: 500}, nil); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "refined")
	// 40 shards of 25 records: the kill comes after 2, with 38 to go.
	shardRows := "25"
	work := tempDirOf(dst)
	cmd := exec.Command(bin, "refine", src, "--out", dst, "--shard-rows", shardRows)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m, err := corpus.ReadManifest(work); err == nil && len(m.Shards) >= 2 {
			cmd.Process.Kill()
			killed = true
			t.Logf("killed with %d of 40 shards committed", len(m.Shards))
			break
		}
	}
	err := cmd.Wait()
	if !killed {
		t.Fatalf("refine finished (%v) before two shards were committed; stderr:\n%s", err, stderr.String())
	}
	if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the kill --out exists (%v): a half-written corpus could read as whole", err)
	}
	if _, err := os.Stat(work); err != nil {
		t.Fatalf("the kill left no work directory (%v): the test did not kill it mid-way", err)
	}
	again := exec.Command(bin, "refine", src, "--out", dst, "--shard-rows", shardRows, "--json")
	out, err := again.Output()
	if err != nil {
		t.Fatalf("refine after the kill: %v", err)
	}
	if _, err := os.Stat(work); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the work directory is still there after a finished refine: %v", err)
	}
	var sum refine.Summary
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatal(err)
	}
	clean := filepath.Join(dir, "clean")
	cleanOut, err := exec.Command(bin, "refine", src, "--out", clean, "--shard-rows", shardRows, "--json").Output()
	if err != nil {
		t.Fatalf("clean refine: %v", err)
	}
	var want refine.Summary
	if err := json.Unmarshal(cleanOut, &want); err != nil {
		t.Fatal(err)
	}
	want.Settings["refined_from"], sum.Settings["refined_from"] = "", ""
	if got, wantJSON := mustJSON(t, sum), mustJSON(t, want); got != wantJSON {
		t.Errorf("after a kill and a restart the summary is\n%s\nwithout a kill\n%s", got, wantJSON)
	}
	if sum.Records.Read != records {
		t.Errorf("%d records read, want %d", sum.Records.Read, records)
	}
	for _, d := range []string{dst, clean} {
		m, err := corpus.ReadManifest(d)
		if err != nil {
			t.Fatal(err)
		}
		if m.Rows != records {
			t.Errorf("%s holds %d records, want %d", d, m.Rows, records)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dst, refine.RecordsName))
	b, _ := os.ReadFile(filepath.Join(clean, refine.RecordsName))
	if !bytes.Equal(a, b) {
		t.Error("the per-record decisions differ between the restarted and the clean refine")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
