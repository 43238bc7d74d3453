package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// TestCompactCommand: distill compact merges a run's small shards into
// full ones, flags after the directory, and keeps every record.
func TestCompactCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	run, err := corpus.Open(dir, corpus.Options{ShardRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		rec := schema.Record{ID: fmt.Sprintf("%016x", i+1), Problem: "p", Answer: "1", Style: schema.StyleSRaR,
			Provenance: schema.Provenance{SpecVersion: schema.SpecVersion, CreatedAt: time.Unix(1700000000, 0).UTC()}}
		if err := run.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run2(t, []string{"compact", dir, "--shard-rows", "10"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	m, err := corpus.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 1 || m.Rows != 10 || !strings.Contains(out.String(), "5 shards -> 1") {
		t.Errorf("after compact: %d shards, %d rows; output %q", len(m.Shards), m.Rows, out.String())
	}
	if code := run2(t, []string{"compact", t.TempDir()}, &out, &errOut); code != exitUsage {
		t.Errorf("compact of a directory without a run: exit %d, want %d", code, exitUsage)
	}
}

func run2(t *testing.T, args []string, stdout, stderr *bytes.Buffer) int {
	t.Helper()
	stdout.Reset()
	stderr.Reset()
	return run(args, stdout, stderr)
}
