package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// smallRun writes a finished run of n records in shards of rows records.
func smallRun(t *testing.T, n, rows int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	run, err := corpus.Open(dir, corpus.Options{ShardRows: rows, ToolVersion: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rec := schema.Record{ID: fmt.Sprintf("%016x", i+1), Problem: fmt.Sprintf("problem %d", i), Answer: "1", Style: schema.StyleSRaR, Split: "train",
			Provenance: schema.Provenance{SpecVersion: schema.SpecVersion, CreatedAt: time.Unix(1700000000, 0).UTC()}}
		if err := run.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDamagedShardThroughTheCommands: compact and status report a shard
// with flipped bytes by name and fail (before: "re-listed", exit 0), the
// manifest keeps the shard's old hash, and distill repair moves it aside.
func TestDamagedShardThroughTheCommands(t *testing.T) {
	dir := smallRun(t, 10, 5)
	shard := filepath.Join(dir, "shards", "part-00000.parquet")
	data, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(shard, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, corpus.ManifestName))
	var out, errOut bytes.Buffer
	if code := run2(t, []string{"compact", dir}, &out, &errOut); code != exitFailed || !strings.Contains(errOut.String(), "shards/part-00000.parquet") {
		t.Errorf("compact over a damaged shard: exit %d, %s", code, errOut.String())
	}
	if code := run2(t, []string{"status", dir}, &out, &errOut); code != exitFailed || !strings.Contains(out.String(), "damaged: 1 shard(s), 5 records") {
		t.Errorf("status of a damaged run: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, corpus.ManifestName)); !bytes.Equal(before, after) {
		t.Error("the manifest changed")
	}
	if code := run2(t, []string{"repair", dir}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "1 damaged shard(s) moved aside") {
		t.Fatalf("repair: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "shards", "broken", "part-00000.parquet")); err != nil {
		t.Errorf("the damaged shard is not in shards/broken: %v", err)
	}
	if code := run2(t, []string{"status", dir}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "corpus: 5 records") {
		t.Errorf("status after repair: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if code := run2(t, []string{"repair", dir}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "nothing to repair") {
		t.Errorf("second repair: exit %d\n%s", code, out.String())
	}
}

// TestMissingRunDirectoryIsAUsageError: every command that takes a run
// directory exits 2 when it does not exist.
func TestMissingRunDirectoryIsAUsageError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, args := range [][]string{
		{"status", missing},
		{"compact", missing},
		{"repair", missing},
		{"cache", "compact", missing},
		{"export", missing, "--format", "jsonl", "--out", filepath.Join(t.TempDir(), "x")},
	} {
		var out, errOut bytes.Buffer
		if code := run2(t, args, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), missing) {
			t.Errorf("%v: exit %d, want %d; %s", args, code, exitUsage, errOut.String())
		}
	}
}

// TestCompactKeepsToolVersionAndRefusesNegativeRows.
func TestCompactKeepsToolVersionAndRefusesNegativeRows(t *testing.T) {
	t.Parallel()
	dir := smallRun(t, 10, 2)
	var out, errOut bytes.Buffer
	if code := run2(t, []string{"compact", dir, "--shard-rows", "-5"}, &out, &errOut); code != exitUsage {
		t.Errorf("--shard-rows -5: exit %d, want %d", code, exitUsage)
	}
	if code := run2(t, []string{"compact", dir, "--shard-rows", "10"}, &out, &errOut); code != exitOK {
		t.Fatalf("compact: exit %d %s", code, errOut.String())
	}
	m, err := corpus.ReadManifest(dir)
	if err != nil || m.ToolVersion != "v9.9.9" || len(m.Shards) != 1 {
		t.Errorf("after compact: %v, tool %q, %d shards", err, m.ToolVersion, len(m.Shards))
	}
}

// TestCompactFindsDamageThatKeptTheModTime: bit rot changes a shard's bytes
// but not its size or modification time, which the quick check of a resume
// trusts; compact hashes every shard, so it names the damage (exit 1) and
// leaves the manifest as it was.
func TestCompactFindsDamageThatKeptTheModTime(t *testing.T) {
	dir := smallRun(t, 10, 5)
	shard := filepath.Join(dir, "shards", "part-00000.parquet")
	st, err := os.Stat(shard)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(shard, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(shard, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, corpus.ManifestName))
	var out, errOut bytes.Buffer
	if code := run2(t, []string{"compact", dir}, &out, &errOut); code != exitFailed ||
		!strings.Contains(errOut.String(), "shards/part-00000.parquet") || !strings.Contains(errOut.String(), "its bytes changed on disk") {
		t.Errorf("compact over a shard damaged in place: exit %d, %s", code, errOut.String())
	}
	if after, _ := os.ReadFile(filepath.Join(dir, corpus.ManifestName)); !bytes.Equal(before, after) {
		t.Error("the manifest changed")
	}
}
