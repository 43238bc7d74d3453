package verify

import (
	"math"
	"math/big"
	"math/cmplx"
	"sort"
	"strconv"
	"strings"
)

func normRel(r string) string {
	if r == "approx" {
		return "="
	}
	return r
}

// relEq compares two relations: as intervals when both are, else as equations up to a
// constant factor (positive for inequalities).
func (c *comparer) relEq(g, p *node) bool {
	if _, ok := toPieces(g, 0); ok {
		if _, ok := toPieces(p, 0); ok {
			return c.intervalsEq(g, p)
		}
	}
	if len(g.rels) != len(p.rels) {
		return false
	}
	if len(g.rels) > 1 {
		for i := range g.rels {
			if normRel(g.rels[i]) != normRel(p.rels[i]) {
				return false
			}
		}
		for i := range g.kids {
			if !c.value(g.kids[i], p.kids[i], false) {
				return false
			}
		}
		return true
	}
	gl, gr, og := g.kids[0], g.kids[1], normRel(g.rels[0])
	pl, pr, op := p.kids[0], p.kids[1], normRel(p.rels[0])
	if og == ">" || og == ">=" {
		gl, gr, og = gr, gl, flipRel(og)
	}
	if op == ">" || op == ">=" {
		pl, pr, op = pr, pl, flipRel(op)
	}
	if og != op {
		return false
	}
	if og == "in" || !isScalar(gl) || !isScalar(gr) || !isScalar(pl) || !isScalar(pr) {
		return c.value(gl, pl, false) && c.value(gr, pr, false)
	}
	f := &node{op: nAdd, kids: []*node{gl, {op: nNeg, kids: []*node{gr}}}}
	h := &node{op: nAdd, kids: []*node{pl, {op: nNeg, kids: []*node{pr}}}}
	vars := collectVars(nil, f, h)
	if len(vars) == 0 {
		return c.value(gl, pl, false) && c.value(gr, pr, false)
	}
	return c.proportional(f, h, vars, og == "<" || og == "<=")
}

func (c *comparer) proportional(f, h *node, vars []string, positive bool) bool {
	var ratio complex128
	have := false
	valid := 0
	e := pointEnv(vars, 0)
	skippable := !usesImaginary(f) && !usesImaginary(h)
	for k := 0; k < nPoints; k++ {
		e.fill(k)
		e.nonReal = false
		fv, ef := ceval(f, e)
		hv, eh := ceval(h, e)
		outside := e.nonReal && skippable // outside a real domain: no evidence either way
		if !finite(fv) || !finite(hv) {
			if finite(fv) != finite(hv) && !outside {
				return false
			}
			continue
		}
		fz, hz := cmplx.Abs(fv) <= 8*ef, cmplx.Abs(hv) <= 8*eh
		if 8*(ef+eh) > 1e-6*math.Max(1, math.Max(cmplx.Abs(fv), cmplx.Abs(hv))) {
			return false // rounding error too large to judge
		}
		if outside {
			continue
		}
		if fz || hz {
			if fz != hz {
				return false
			}
			valid++
			continue
		}
		r := hv / fv
		if !have {
			ratio, have = r, true
		} else if !near(r, ratio, 1e-7) {
			return false
		}
		valid++
	}
	if valid < minValid {
		return false
	}
	if have && positive {
		return real(ratio) > 0 && math.Abs(imag(ratio)) <= 1e-9*cmplx.Abs(ratio)
	}
	return true
}

// scalarEq compares two single values: exactly when both are rational, else numerically.
func (c *comparer) scalarEq(a, b *node) bool {
	if !isScalar(a) || !isScalar(b) {
		return false
	}
	ra, oka := ratOf(a)
	rb, okb := ratOf(b)
	if oka && okb {
		if ra.Cmp(rb) == 0 {
			return true
		}
		if lit, ok := loneDecimal(a); ok && !hasDecimal(b) && !terminating(rb) {
			return decimalClose(lit, ratComplex(rb))
		}
		if lit, ok := loneDecimal(b); ok && !hasDecimal(a) && !terminating(ra) {
			return decimalClose(lit, ratComplex(ra))
		}
		return false
	}
	sa, ia := infSign(a)
	sb, ib := infSign(b)
	if ia || ib {
		return ia && ib && sa == sb
	}
	vars := collectVars(nil, a, b)
	if len(vars) == 0 {
		va, ea := ceval(a, nil)
		vb, eb := ceval(b, nil)
		if !finite(va) || !finite(vb) {
			return false
		}
		if nearE(va, ea, vb, eb, relTol) {
			return true
		}
		if lit, ok := loneDecimal(a); ok {
			return decimalClose(lit, vb)
		}
		if lit, ok := loneDecimal(b); ok {
			return decimalClose(lit, va)
		}
		return false
	}
	valid := 0
	e := pointEnv(vars, 0)
	for k := 0; k < nPoints; k++ {
		e.fill(k)
		e.nonReal = false
		va, ea := ceval(a, e)
		vb, eb := ceval(b, e)
		fa, fb := finite(va), finite(vb)
		if !fa || !fb {
			if fa != fb && !e.nonReal {
				return false
			}
			continue
		}
		if !nearE(va, ea, vb, eb, relTol) {
			if e.nonReal && !usesImaginary(a) && !usesImaginary(b) {
				continue // outside the real domain of one side: no evidence either way
			}
			return false
		}
		valid++
	}
	return valid >= minValid
}

// usesImaginary reports whether n mentions the imaginary unit i.
func usesImaginary(n *node) bool {
	if n == nil {
		return false
	}
	if n.op == nConst && n.name == "i" {
		return true
	}
	for _, k := range n.kids {
		if usesImaginary(k) {
			return true
		}
	}
	return false
}

func ratComplex(r *big.Rat) complex128 {
	f, _ := r.Float64()
	return complex(f, 0)
}

// loneDecimal returns the literal when n is a single decimal number such as 0.333 or -1.5.
func loneDecimal(n *node) (string, bool) {
	neg := false
	if n.op == nNeg {
		neg, n = true, n.kids[0]
	}
	if n.op != nNum || !strings.ContainsAny(n.lit, ".eE") {
		return "", false
	}
	if neg {
		return "-" + n.lit, true
	}
	return n.lit, true
}

func hasDecimal(n *node) bool {
	if n == nil {
		return false
	}
	if n.op == nNum {
		return strings.ContainsAny(n.lit, ".eE")
	}
	for _, k := range n.kids {
		if hasDecimal(k) {
			return true
		}
	}
	return false
}

// terminating reports whether r has a finite decimal expansion.
func terminating(r *big.Rat) bool {
	d := new(big.Int).Set(r.Denom())
	d.Rsh(d, d.TrailingZeroBits())
	five := big.NewInt(5)
	m := new(big.Int)
	for d.Cmp(big.NewInt(1)) > 0 {
		q, rem := new(big.Int).QuoRem(d, five, m)
		if rem.Sign() != 0 {
			return false
		}
		d = q
	}
	return true
}

// decimalClose accepts a decimal approximation with at least minSigDig significant digits that
// is within one unit of its last digit of the exact value v.
func decimalClose(lit string, v complex128) bool {
	_, exp, sig, _, ok := litParts(strings.TrimPrefix(lit, "-"))
	if !ok || sig < minSigDig || math.Abs(imag(v)) > 1e-12*cmplx.Abs(v) {
		return false
	}
	d, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false
	}
	ulp := math.Pow10(exp)
	return math.Abs(real(v)-d) <= ulp*(1+1e-9)
}

func infSign(n *node) (int, bool) {
	if n == nil {
		return 0, false
	}
	switch {
	case n.op == nConst && n.name == "inf":
		return 1, true
	case n.op == nNeg && n.kids[0].op == nConst && n.kids[0].name == "inf":
		return -1, true
	case n.op == nAdd && len(n.kids) == 1:
		return infSign(n.kids[0])
	}
	return 0, false
}

func hasVars(n *node) bool {
	if n == nil {
		return false
	}
	if n.op == nVar {
		return true
	}
	for _, k := range n.kids {
		if hasVars(k) {
			return true
		}
	}
	return false
}

func collectVars(dst []string, ns ...*node) []string {
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.op == nVar {
			for _, v := range dst {
				if v == n.name {
					return
				}
			}
			dst = append(dst, n.name)
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	for _, n := range ns {
		walk(n)
	}
	sort.Strings(dst)
	return dst
}

// pointEnv gives deterministic pseudo-random values to vars at point k. The first five points
// are positive, the rest may be negative so that sqrt(x^2) and x differ.
func pointEnv(vars []string, k int) *env {
	e := &env{names: vars, vals: make([]complex128, len(vars))}
	e.fill(k)
	return e
}

func (e *env) fill(k int) {
	for i, name := range e.names {
		h := mix64(uint64(k+1)*0x9E3779B97F4A7C15 ^ strHash(name))
		u := float64(h>>11) / float64(1<<53)
		x := 0.55 + 1.9*u
		if k >= 5 && h&1 == 1 {
			x = -x
		}
		e.vals[i] = complex(x, 0)
	}
}

func strHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func mix64(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func hasPM(n *node) bool {
	if n == nil {
		return false
	}
	switch n.op {
	case nPM:
		return true
	case nTuple, nMatrix, nSet, nList, nUnion, nRel:
		return false
	}
	for _, k := range n.kids {
		if hasPM(k) {
			return true
		}
	}
	return false
}

// expandPM turns an expression with ± into the list of its alternatives (at most 8).
func expandPM(n *node) *node {
	if !hasPM(n) {
		return n
	}
	alts := alternatives(n, 0)
	if len(alts) == 0 || len(alts) > 8 {
		return n
	}
	return &node{op: nList, kids: alts}
}

func alternatives(n *node, depth int) []*node {
	if n == nil {
		return []*node{nil}
	}
	if depth > 40 || !hasPM(n) {
		return []*node{n}
	}
	if n.op == nPM {
		var out []*node
		lefts := alternatives(n.kids[0], depth+1)
		rights := alternatives(n.kids[1], depth+1)
		signs := []bool{false, true}
		if n.name == "mp" {
			signs = []bool{true, false}
		}
		for _, l := range lefts {
			for _, neg := range signs {
				for _, r := range rights {
					term := r
					if neg {
						term = &node{op: nNeg, kids: []*node{r}}
					}
					if l == nil {
						out = append(out, term)
					} else {
						out = append(out, &node{op: nAdd, kids: []*node{l, term}})
					}
					if len(out) > 8 {
						return nil
					}
				}
			}
		}
		return out
	}
	combos := [][]*node{nil}
	for _, k := range n.kids {
		ka := alternatives(k, depth+1)
		if ka == nil {
			return nil
		}
		var next [][]*node
		for _, prefix := range combos {
			for _, a := range ka {
				row := append(append([]*node(nil), prefix...), a)
				next = append(next, row)
			}
		}
		if len(next) > 8 {
			return nil
		}
		combos = next
	}
	out := make([]*node, 0, len(combos))
	for _, kids := range combos {
		cp := *n
		cp.kids = kids
		out = append(out, &cp)
	}
	return out
}
