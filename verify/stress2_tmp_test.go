package verify

import (
	"testing"
	"time"
)

func TestStress2Tmp(t *testing.T) {
	a := "^10!(/10.5+\\cup1%\\cup*\\}y3/\\frac2^{2^{2}}!\\binom31e5^\\circ\\\\1!\\sin^\\circ\\\\1e52^{2^{2}}%1e5*3\\}yi\\sqrt\\frac\\begin{pmatrix}2^{2^{2}}0.5^3{\\infty\\end{pmatrix}\\sqrti\\sqrt\\}1\\sqrt\\in"
	b := "1%\\sin\\}()|%\\in!\\in-10[{/\\pi\\cup\\begin{pmatrix}x3![y\\sin1,}1e52^{2^{2}}\\\\=\\infty}\\frac\\text{ and }\\{e\\begin{pmatrix}!]i*[&\\infty|+,2^{2^{2}}=1,"
	st := time.Now()
	for range 100 {
		Compare(a, b)
	}
	t.Logf("%v per compare", time.Since(st)/100)
}
