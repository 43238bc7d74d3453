package verify

import "testing"

func BenchmarkPairTmp(b *testing.B) {
	for _, p := range typicalPairs {
		b.Run(p[0], func(b *testing.B) {
			for b.Loop() {
				Equal(p[0], p[1])
			}
		})
	}
}
