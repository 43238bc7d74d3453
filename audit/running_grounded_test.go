package audit

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
)

// TestAuditOfAGroundedRunThatMergesItsShards: validate on a grounded run
// still going, whose run merges its small shards after validate listed
// them, reads every listed record with its passage and questions (the
// shards it holds open, not the paths the merge removed).
func TestAuditOfAGroundedRunThatMergesItsShards(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	r, err := corpus.Open(dir, corpus.Options{ShardRows: 1000, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 6 {
		rec := groundedRecord(i, 2)
		if err := r.Append(&rec); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if err := r.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	in, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Running || len(in.Files) != 3 {
		t.Fatalf("input: running %v, %d files", in.Running, len(in.Files))
	}
	if c, err := r.Compact(); err != nil || c.Merged != 3 {
		t.Fatalf("compact: %+v %v", c, err)
	}
	rep, err := Audit(context.Background(), in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corpus.Records != 6 || len(rep.InputProblems) != 0 {
		t.Errorf("audit after the merge: %d records, input problems %+v", rep.Corpus.Records, rep.InputProblems)
	}
	if g := rep.Grounded; g == nil || g.Records != 6 || g.Questions != 12 {
		t.Errorf("grounded section after the merge: %+v; want 6 passages, 12 questions", g)
	}
}
