package verify

import (
	"math"
	"math/cmplx"
)

// absPieces reads an absolute-value inequality as intervals: |u| < c and |u| <= c (also
// written c > |u|) are one interval, |u| > c and |u| >= c the union of two, where u is linear
// in one variable and c a positive constant: |x - 1| <= 2 is [-1, 3], |x| > 2 is
// (-inf, -2) u (2, inf). The ends are built as exact expressions of u's coefficients, so
// they compare as rationals where they are.
func absPieces(n *node) ([]piece, bool) {
	if n.op != nRel || len(n.kids) != 2 {
		return nil, false
	}
	a, c, r := n.kids[0], n.kids[1], n.rels[0]
	if c.op == nAbs && a.op != nAbs {
		a, c, r = c, a, flipRel(r)
	}
	if a.op != nAbs || hasVars(c) {
		return nil, false
	}
	switch r {
	case "<", "<=", ">", ">=":
	default:
		return nil, false
	}
	u := a.kids[0]
	vars := collectVars(nil, u)
	if len(vars) != 1 {
		return nil, false
	}
	x := vars[0]
	m := substVar(u, x, numNode(0))
	k := &node{op: nAdd, kids: []*node{substVar(u, x, numNode(1)), {op: nNeg, kids: []*node{m}}}}
	kv, mv, cv := realValue(k), realValue(m), realValue(c)
	if math.IsNaN(kv) || math.IsNaN(mv) || math.IsNaN(cv) || kv == 0 || cv <= 0 {
		return nil, false
	}
	for _, t := range [...]int{2, -3, 7} {
		v := realValue(substVar(u, x, numNode(t)))
		if want := kv*float64(t) + mv; math.IsNaN(v) || math.Abs(v-want) > 1e-9*math.Max(1, math.Abs(want)) {
			return nil, false // not linear: |x^2 - 1| < 3 is compared as written
		}
	}
	end := func(sign bool) *node { // (±c - m) / k
		cc := c
		if sign {
			cc = &node{op: nNeg, kids: []*node{c}}
		}
		return &node{op: nDiv, kids: []*node{{op: nAdd, kids: []*node{cc, {op: nNeg, kids: []*node{m}}}}, k}}
	}
	lo, hi := end(true), end(false)
	if kv < 0 {
		lo, hi = hi, lo
	}
	closed := r == "<=" || r == ">="
	if r == "<" || r == "<=" {
		return []piece{{lo: lo, hi: hi, loC: closed, hiC: closed}}, true
	}
	return []piece{{lo: infNode(true), hi: lo, hiC: closed}, {lo: hi, hi: infNode(false), loC: closed}}, true
}

// realValue evaluates a tree without variables; NaN when it is not a finite real number.
func realValue(n *node) float64 {
	v, _ := ceval(n, nil)
	if cmplx.IsNaN(v) || cmplx.IsInf(v) || imag(v) != 0 {
		return math.NaN()
	}
	return real(v)
}

// substVar returns a copy of n with the variable name replaced by v.
func substVar(n *node, name string, v *node) *node {
	if n == nil {
		return nil
	}
	if n.op == nVar && n.name == name {
		return v
	}
	if len(n.kids) == 0 {
		return n
	}
	cp := *n
	cp.kids = make([]*node, len(n.kids))
	for i, k := range n.kids {
		cp.kids[i] = substVar(k, name, v)
	}
	return &cp
}

// bothHold reads relations joined by "and" on one variable as the intersection of their
// intervals: "x \ge 2 and x \le 5" is [2, 5]. When nothing holds both ("x < -2 and x > 2"),
// "and" lists the pieces of a union. A second variable or an end that is not a real number
// give nothing.
func bothHold(n *node, depth int) ([]piece, bool) {
	if len(collectVars(nil, n.kids...)) != 1 {
		return nil, false
	}
	var cur piece
	for i, k := range n.kids {
		if k.op != nRel {
			return nil, false
		}
		ps, ok := toPieces(k, depth+1)
		if !ok || len(ps) != 1 || ps[0].set != nil {
			return nil, false
		}
		q := ps[0]
		if i == 0 {
			cur = q
			continue
		}
		switch c, ok := cmpEnds(cur.lo, q.lo); {
		case !ok:
			return nil, false
		case c < 0:
			cur.lo, cur.loC = q.lo, q.loC
		case c == 0:
			cur.loC = cur.loC && q.loC
		}
		switch c, ok := cmpEnds(cur.hi, q.hi); {
		case !ok:
			return nil, false
		case c > 0:
			cur.hi, cur.hiC = q.hi, q.hiC
		case c == 0:
			cur.hiC = cur.hiC && q.hiC
		}
	}
	if c, ok := cmpEnds(cur.lo, cur.hi); !ok {
		return nil, false
	} else if c > 0 || c == 0 && !(cur.loC && cur.hiC) {
		// Nothing holds both: "x < -2 and x > 2" is written for the union.
		var out []piece
		for _, k := range n.kids {
			ps, _ := toPieces(k, depth+1)
			out = append(out, ps...)
		}
		return out, true
	}
	return []piece{cur}, true
}

// cmpEnds orders two interval ends, infinities included.
func cmpEnds(a, b *node) (int, bool) {
	sa, ia := infSign(a)
	sb, ib := infSign(b)
	switch {
	case ia && ib:
		return sa - sb, true
	case ia:
		return sa, true
	case ib:
		return -sb, true
	}
	va, vb := realValue(a), realValue(b)
	if math.IsNaN(va) || math.IsNaN(vb) {
		return 0, false
	}
	if math.Abs(va-vb) <= 1e-12*math.Max(1, math.Max(math.Abs(va), math.Abs(vb))) {
		return 0, true
	}
	if va < vb {
		return -1, true
	}
	return 1, true
}
