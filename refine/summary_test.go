package refine

import (
	"bytes"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/golden"
	"github.com/rubricforge/rubricforge/schema"
)

// TestSummaryTextGolden: the summary as people read it, for a refinement
// that raised the held-out AUROC, one that did not, a dry run with its
// per-record lines, and a second run into a finished --out.
func TestSummaryTextGolden(t *testing.T) {
	t.Parallel()
	good := handMatrix(schema.StyleSRaR, []handItem{
		{schema.TypeSuggest, "1110", "0010"},
		{schema.TypeSuggest, "0000", "0000"},
		{schema.TypeSuggest, "1111", "1111"},
		{schema.TypePitfall, "0000", "1111"},
		{schema.TypeSuggest, "1110", "0010"},
		{schema.TypeAnswer, "1111", "0000"},
	})
	worse := handMatrix(schema.StyleSRaR, []handItem{
		{schema.TypeSuggest, "1100", "0000"},
		{schema.TypeSuggest, "1111", "1111"},
		{schema.TypeAnswer, "1110", "0001"},
	})
	raised := Decide("0000000000000001", good, DefaultOptions())
	lowered := Decide("0000000000000002", worse, DefaultOptions())
	unmeasured := Decision{ID: "0000000000000003", Unmeasured: "only_correct"}
	base := func(dry bool, ds ...*Decision) *Summary {
		s := &Summary{Source: "/abs/runs/demo", SourceFingerprints: []string{"9e6528f463c6b627"}, Fingerprint: "5c2f29a5ba3aeb96", DryRun: dry}
		for _, d := range ds {
			s.Add(d)
		}
		s.Finish()
		return s
	}
	var b bytes.Buffer
	b.WriteString("== raised\n")
	base(false, &raised, &unmeasured).WriteText(&b, "runs/demo", "runs/demo-refined")
	b.WriteString("== not raised\n")
	base(false, &lowered).WriteText(&b, "runs/demo", "runs/demo-refined")
	b.WriteString("== dry run\n")
	writeDryRunLine(&b, &raised)
	writeDryRunLine(&b, &lowered)
	base(true, &raised, &lowered).WriteText(&b, "runs/demo", "runs/demo-refined")
	b.WriteString("== decompose\n")
	dec := base(false, &raised)
	dec.Settings = map[string]string{"decompose": "on: distill m, judge m, empirical m"}
	dec.Decomposed = DecomposeCounts{Units: 3, Failed: 1, Requests: 41, Proposed: 8, Kept: 5, Dropped: map[string]int64{DropNoEdge: 2, DropInvalid: 1}}
	dec.WriteText(&b, "runs/demo", "runs/demo-refined")
	b.WriteString("== already done\n")
	(&Summary{AlreadyDone: true, Fingerprint: "5c2f29a5ba3aeb96"}).WriteText(&b, "runs/demo", "runs/demo-refined")
	golden.Check(t, "testdata/summary.golden", b.Bytes())
}
