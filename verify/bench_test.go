package verify

import (
	"strings"
	"testing"
)

// typicalPairs is a mix of the answers a reward function sees most: integers, fractions and
// short LaTeX, a few sets, intervals and expressions, and some whole solutions.
var typicalPairs = [][2]string{
	{"42", "42"}, {"42", "41"}, {"1000", "1,000"}, {"-5", "-5"}, {"7", "\\boxed{7}"},
	{"\\frac{1}{2}", "0.5"}, {"\\frac{1}{2}", "\\frac{1}{2}"}, {"\\frac{3}{4}", "3/4"}, {"\\frac{2}{3}", "\\dfrac{2}{3}"},
	{"12", "12"}, {"256", "256"}, {"3", "4"}, {"0", "0"}, {"100", "10^2"}, {"2^{10}", "1024"},
	{"\\sqrt{2}", "\\sqrt{2}"}, {"2\\sqrt{2}", "\\sqrt{8}"}, {"\\frac{\\pi}{4}", "\\pi/4"},
	{"50\\%", "50"}, {"30^\\circ", "30"}, {"5 \\text{ cm}", "5"}, {"\\$1.50", "1.5"},
	{"(1,2)", "(1, 2)"}, {"\\{1,2\\}", "\\{2,1\\}"}, {"[0,1)", "[0, 1)"}, {"B", "(B)"},
	{"x^2+2x+1", "(x+1)^2"}, {"y=2x+1", "y=1+2x"}, {"\\text{Monday}", "Monday"},
	{"17", "The sum is $8+9=17$, so the answer is $\\boxed{17}$."},
}

// BenchmarkEqual reports comparisons per wall-clock second (cmp/s) and, where the platform
// tells, per second of process CPU time (cmp/cpu-s), which a busy machine does not distort.
func BenchmarkEqual(b *testing.B) {
	b.ReportAllocs()
	n := 0
	cpu0 := processCPU()
	for b.Loop() {
		p := typicalPairs[n%len(typicalPairs)]
		Equal(p[0], p[1])
		n++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmp/s")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "cmp/cpu-s")
	}
}

func BenchmarkEqualIntegers(b *testing.B) {
	for b.Loop() {
		Equal("1234", "1,234")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmp/s")
}

func BenchmarkExtract(b *testing.B) {
	text := "We add the two numbers: $8+9=17$. Therefore the answer is $\\boxed{17}$."
	for b.Loop() {
		Extract(text)
	}
}

// longSolution is a reasoning model's solution of about 3 KB: 30 lines of work with math,
// then its boxed answer. Extraction reads its end more than once (the cut-off rule), so its
// cost per byte is what this measures.
var longSolution = strings.Repeat("We add the numbers one by one, keeping a running total of $3 + 4 = 7$ and then multiplying by 2.\n", 30) +
	"Therefore the answer is $\\boxed{17}$."

func BenchmarkExtractSolution(b *testing.B) {
	b.SetBytes(int64(len(longSolution)))
	for b.Loop() {
		Extract(longSolution)
	}
}
