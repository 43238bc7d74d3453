package reward

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// BenchmarkFormulas is the formulas' throughput: ScoreGroup of 16 rollouts
// against a 10-item rubric, in item verdicts per second.
func BenchmarkFormulas(b *testing.B) {
	items := rewardtest.BenchRubric()
	lab := rewardtest.Label(items)
	rs := rewardtest.BenchGroup(16, items, judged)
	p := DefaultParams()
	for _, scheme := range schema.Schemes {
		b.Run(scheme, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ScoreGroup(p, scheme, lab, rs)
			}
			b.ReportMetric(float64(len(rs)*len(items)*b.N)/b.Elapsed().Seconds(), "verdicts/s")
		})
	}
	b.Run("srar-steps-only", func(b *testing.B) {
		d := make([][]StepDelta, len(rs))
		for b.Loop() {
			for i := range rs {
				d[i] = SRaRDeltas(p, items, rs[i].Verdicts, len(rs[i].Steps)).Steps
			}
			NormalizeSteps(d, p.Epsilon)
		}
		b.ReportMetric(float64(len(rs)*len(items)*b.N)/b.Elapsed().Seconds(), "verdicts/s")
	})
}
