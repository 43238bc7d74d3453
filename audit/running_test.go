package audit

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/schema"
)

// TestAuditOfARunThatMergesItsShards: validate on a run still going, whose
// run merges its small shards (removing them) after validate listed them,
// reads every record it listed and reports no damaged input; before, the
// removed shards were "listed but cannot be opened".
func TestAuditOfARunThatMergesItsShards(t *testing.T) {
	t.Parallel()
	recs := make([]schema.Record, 30)
	for i := range recs {
		recs[i] = schema.Record{ID: fmt.Sprintf("%016x", i+1), Split: "train", Problem: fmt.Sprintf("problem %d", i), Answer: "1", Style: schema.StyleSRaR,
			Provenance: schema.Provenance{SpecVersion: schema.SpecVersion, CreatedAt: time.Unix(1700000000, 0).UTC()}}
	}
	rep := auditWhileTheRunMerges(t, recs, 3)
	if rep.Corpus.Records != 30 || len(rep.InputProblems) != 0 {
		t.Errorf("audit after the merge: %d records, input problems %+v", rep.Corpus.Records, rep.InputProblems)
	}
}

// auditWhileTheRunMerges writes recs to a run, perShard to a shard, opens
// the run as an input, has the run merge every shard (removing the files
// the input listed), then audits the input.
func auditWhileTheRunMerges(t *testing.T, recs []schema.Record, perShard int) *Report {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	r, err := corpus.Open(dir, corpus.Options{ShardRows: 1000, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range recs {
		if err := r.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
		if (i+1)%perShard == 0 {
			if err := r.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	in, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	shards := len(recs) / perShard
	if !in.Running || len(in.Files) != shards {
		t.Fatalf("input: running %v, %d files, want %d", in.Running, len(in.Files), shards)
	}
	if c, err := r.Compact(); err != nil || c.Merged != shards {
		t.Fatalf("compact: %+v %v", c, err)
	}
	rep, err := Audit(context.Background(), in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
