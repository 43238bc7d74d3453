package verify

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

func TestStressTmp(t *testing.T) {
	if os.Getenv("STRESS") == "" {
		return
	}
	parts := []string{"1", "2", "x", "y", "+", "-", "*", "/", "^", "(", ")", "[", "]", "{", "}", "\\{", "\\}", ",", "=", "<", "\\pm",
		"\\frac", "\\sqrt", "\\sin", "\\log_", "!", "\\binom", "\\cup", "\\infty", "\\pi", "e", "i", "0.5", "10", "99", "&", "\\\\",
		"\\begin{pmatrix}", "\\end{pmatrix}", "\\text{ and }", "|", "\\in", "%", "^\\circ", "3", "7", "1e5", "2^{2^{2}}", "!", "\\ln"}
	r := rand.New(rand.NewPCG(1, 2))
	var worst time.Duration
	var worstIn [2]string
	deadline := time.Now().Add(60 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		gen := func() string {
			var b strings.Builder
			k := 1 + r.IntN(60)
			if r.IntN(4) == 0 {
				// a long set of symbolic elements
				b.WriteString("\\{")
				for j := range 1 + r.IntN(40) {
					if j > 0 {
						b.WriteString(",")
					}
					b.WriteString("x^2+\\sin(y)+\\sqrt{x}\\pm ")
					b.WriteString(parts[r.IntN(len(parts))])
				}
				b.WriteString("\\}")
				return b.String()
			}
			for range k {
				b.WriteString(parts[r.IntN(len(parts))])
			}
			return b.String()
		}
		a, b := gen(), gen()
		if r.IntN(3) == 0 {
			b = a
		}
		st := time.Now()
		Compare(a, b)
		d := time.Since(st)
		n++
		if d > 20*time.Millisecond {
			best := d
			for range 3 {
				st := time.Now()
				Compare(a, b)
				if e := time.Since(st); e < best {
					best = e
				}
			}
			d = best
		}
		if d > worst {
			worst, worstIn = d, [2]string{a, b}
		}
	}
	t.Logf("%d comparisons, worst %v on %q vs %q", n, worst, worstIn[0], worstIn[1])
}
