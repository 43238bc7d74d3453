package refine

import (
	"testing"

	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkDecideApply is the per-record work of distill refine on a
// record of 8 rollouts x 10 items: decide on every rollout and on each
// fold's complement, weigh, score every figure, add the record to the
// summary's bootstrap, write the refined record (make bench; make
// bench-refine runs the whole command at 100K records).
func BenchmarkDecideApply(b *testing.B) {
	o := synthcorpus.Options{Rollouts: 8, Items: 10, Seed: 3}
	recs := make([]schema.Record, 256)
	for i := range recs {
		recs[i], _ = o.Record(i)
	}
	var m discrim.Matrix
	sum := &Summary{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rec := &recs[i%len(recs)]
		d := decideRecord(rec, &m, DefaultOptions())
		sum.Add(&d)
		if d.Unmeasured == "" {
			Apply(rec, &d)
		}
	}
}
