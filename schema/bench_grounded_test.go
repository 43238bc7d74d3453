package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The grounded benchmarks parse replies the simulated endpoint gave in
// `make bench-scale-grounded` (testdata/grounded), the parsers' hot path at
// scale.

func groundedReply(b *testing.B, name string) string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "grounded", name))
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

func BenchmarkParseQuestions(b *testing.B) {
	in := groundedReply(b, "questions.txt")
	opt := QuestionOptions{K: 1, MinCriteria: 3, MaxCriteria: 12}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseQuestions(in, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseEnrichment(b *testing.B) {
	in := groundedReply(b, "enrichment.txt")
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i+1)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEnrichment(in, ids, 1, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAnalysis(b *testing.B) {
	in := groundedReply(b, "analysis.txt")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAnalysis(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseValidityBatch(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "judge", "validity_batch_good.txt"))
	if err != nil {
		b.Fatal(err)
	}
	in := string(raw)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseValidityBatch(in, []int32{1, 2, 3}); err != nil {
			b.Fatal(err)
		}
	}
}
