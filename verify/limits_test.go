package verify

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// pathological returns inputs that must neither hang nor panic.
func pathological() map[string]string {
	deep := strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000)
	return map[string]string{
		"tower of tens":          `10^{10^{10}}`,
		"taller tower":           `10^{10^{10^{10^{10}}}}`,
		"power tower of twos":    `2^{2^{2^{2^{2^{2^{2}}}}}}`,
		"huge factorial":         `9999999!`,
		"factorial of factorial": `(9999999!)!`,
		"huge exponent literal":  `1e999999999`,
		"tiny exponent literal":  `1e-999999999`,
		"huge binomial":          `\binom{1000000000}{500000000}`,
		"huge root index":        `\sqrt[100000]{2}`,
		"variable tower":         `x^{10^{10}}`,
		"division by zero":       `\frac{1}{0}`,
		"zero to zero":           `0^0`,
		"log of zero":            `\log 0`,
		"deep parens":            deep,
		"deep parens short":      strings.Repeat("(", 5000) + "x" + strings.Repeat(")", 5000),
		"deep braces":            strings.Repeat("{", 100000) + "1" + strings.Repeat("}", 100000),
		"deep fractions":         strings.Repeat(`\frac{1}{`, 2000) + "2" + strings.Repeat("}", 2000),
		"deep roots":             strings.Repeat(`\sqrt{`, 2000) + "2" + strings.Repeat("}", 2000),
		"deep text":              strings.Repeat(`\text{`, 5000) + "a" + strings.Repeat("}", 5000),
		"many minus signs":       strings.Repeat("-", 100000) + "1",
		"megabyte of sums":       strings.Repeat("1+", 500000) + "1",
		"megabyte of letters":    strings.Repeat("a", 1<<20),
		"megabyte of answers":    strings.Repeat("the answer is ", 80000),
		"megabyte of boxes":      strings.Repeat(`\boxed{`, 150000),
		"unbalanced braces":      `}}}{{{\frac{{}}\sqrt[`,
		"unbalanced box":         `\boxed{\frac{1}{2}`,
		"lone commands":          `\left( \right. \begin{pmatrix} \end{bmatrix} \\ & ^ _ !`,
		"long list":              strings.Repeat("1, ", 600) + "1",
		"long set of symbols":    `\{` + strings.Repeat(`x^2+\sin(x)+\sqrt{x}, `, 60) + `1\}`,
		"many plus-minus":        strings.Repeat(`1 \pm `, 40) + "1",
		"big matrix":             `\begin{pmatrix}` + strings.Repeat(strings.Repeat("1 & ", 30)+`1 \\ `, 30) + `\end{pmatrix}`,
		"thousands of groups":    "1" + strings.Repeat(",000", 2000),
		"nested intervals":       strings.Repeat(`(1,`, 3000) + "2" + strings.Repeat("]", 3000),
		"invalid utf8":           "\xff\xfe\\frac{\xc3}{2}",
	}
}

// hangLimit tells a hang from slowness: the slowest input (a megabyte of letters) takes seconds
// under -race, and a busy shared machine can make that several times longer.
const hangLimit = 90 * time.Second

func TestPathologicalInputsFinish(t *testing.T) {
	t.Parallel()
	others := []string{"1", `\frac{1}{2}`, "x", `(1,2]`, `\{1,2\}`, "y=2x+1"}
	for name, in := range pathological() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			Extract(in)
			for _, o := range others {
				if r := Compare(in, o); internalError(r) {
					t.Errorf("%s: Compare(input, %q) recovered a panic: %s", name, o, r.Reason)
				}
				if r := Compare(o, in); internalError(r) {
					t.Errorf("%s: Compare(%q, input) recovered a panic: %s", name, o, r.Reason)
				}
			}
			if r := Compare(in, in); internalError(r) {
				t.Errorf("%s: Compare(input, input) recovered a panic: %s", name, r.Reason)
			}
		}()
		select {
		case <-done:
		case <-time.After(hangLimit):
			t.Fatalf("%s: comparison did not finish within %v (a hang, not a slow machine)", name, hangLimit)
		}
	}
}

// TestPathologicalVerdicts pins the answers for inputs whose value cannot be computed.
func TestPathologicalVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gold, pred string
		want       bool
	}{
		{`10^{10^{10}}`, `10^{10^{10}}`, true},
		{`10^{10^{10}}`, `10^{10^{10}}+1`, false},
		{`9999999!`, `9999999!`, true},
		{`9999999!`, `9999998!`, false},
		{`\frac{1}{0}`, `\frac{2}{0}`, false},
		{`1e999999999`, `1e999999998`, false},
		{`\boxed{\frac{1}{2}`, `\frac{1}{2}`, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.gold, tt.pred); got != tt.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", tt.gold, tt.pred, got, tt.want)
		}
	}
}

// TestConcurrentUse checks that Compare shares no state between calls (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	pairs := [][3]string{
		{`\frac{1}{2}`, "0.5", "1"}, {`x^2+2x+1`, `(x+1)^2`, "1"}, {`\{1,2\}`, `\{2,1\}`, "1"},
		{`(1,2)`, `(2,1)`, "0"}, {"B", "(B) 42", "1"}, {`\sqrt{2}`, "1.41", "0"},
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(pairs))
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				for _, p := range pairs {
					if got := Equal(p[0], p[1]); got != (p[2] == "1") {
						errs <- p[0] + " vs " + p[1]
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent Equal gave a wrong verdict for %s", e)
	}
}
