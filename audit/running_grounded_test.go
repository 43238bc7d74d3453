package audit

import (
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

// TestAuditOfAGroundedRunThatMergesItsShards: validate on a grounded run
// still going, whose run merges its small shards after validate listed
// them, reads every listed record with its passage and questions (the
// shards it holds open, not the paths the merge removed).
func TestAuditOfAGroundedRunThatMergesItsShards(t *testing.T) {
	t.Parallel()
	recs := make([]schema.Record, 6)
	for i := range recs {
		recs[i] = groundedRecord(i, 2)
	}
	rep := auditWhileTheRunMerges(t, recs, 2)
	if rep.Corpus.Records != 6 || len(rep.InputProblems) != 0 {
		t.Errorf("audit after the merge: %d records, input problems %+v", rep.Corpus.Records, rep.InputProblems)
	}
	if g := rep.Grounded; g == nil || g.Records != 6 || g.Questions != 12 {
		t.Errorf("grounded section after the merge: %+v; want 6 passages, 12 questions", g)
	}
}
