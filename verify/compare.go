package verify

import (
	"fmt"
	"strconv"
	"strings"
)

// Tolerances; the README's answer equivalence policy explains them.
const (
	relTol    = 1e-8 // relative tolerance between two exact forms evaluated in floating point
	minSigDig = 5    // a decimal approximation needs this many significant digits
	nPoints   = 8    // evaluation points for expressions with variables
	minValid  = 4    // points where both sides must be finite
	maxColl   = 32   // elements in a set or list compared without order
	maxSteps  = 4000 // element comparisons per Compare call
)

// Result is the verdict of [Compare] and how it was reached.
type Result struct {
	Equal bool
	// Method names the rule that decided: "exact", "numeric", "symbolic", "set", "tuple",
	// "interval", "matrix", "equation", "choice", "text" or "none".
	Method string
	// Gold and Pred are the normalized answers that were compared.
	Gold, Pred string
	// Extracted is true when a final answer was extracted from pred (tag, box or statement).
	Extracted bool
	// Reason explains a not-equal verdict that was not a plain mismatch.
	Reason string
}

// Equal reports whether pred states the same answer as gold; see [Compare].
func Equal(gold, pred string) bool { return Compare(gold, pred).Equal }

// Compare decides whether pred states the same answer as gold. pred may be a whole solution
// (its final answer is extracted first, see [Extract]) or a bare answer; gold may be plain,
// in $...$ or in \boxed{}. It never panics and does bounded work for any input.
func Compare(gold, pred string) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res.Equal = false
			res.Method = "none"
			res.Reason = fmt.Sprintf("internal error recovered: %v", r)
		}
	}()
	g := cleanAnswer(gold)
	if a, ok := Extract(gold); ok {
		g = a
	}
	p := cleanAnswer(pred)
	if a, ok := Extract(pred); ok {
		p = a
		res.Extracted = true
	}
	ga, pa := prepare(g), prepare(p)
	res.Gold, res.Pred = ga.display(), pa.display()
	res.Equal, res.Method, res.Reason = decide(&ga, &pa)
	return res
}

// display is the normalized answer with its percent or degree mark restored.
func (a *answer) display() string {
	s := a.canon
	if a.bad || s == "" {
		return s
	}
	if a.percent {
		s += `\%`
	}
	if a.degree {
		s += `^\circ`
	}
	return s
}

type answer struct {
	lexed
	canon      string
	root       *node
	parsed     bool
	parseTried bool
}

func prepare(s string) answer {
	s = strings.TrimSpace(s)
	if len(s) > maxAnswerLen {
		return answer{canon: s, lexed: lexed{bad: true}}
	}
	lx := lex(s)
	if lx.bad {
		return answer{canon: s, lexed: lx}
	}
	return answer{lexed: lx, canon: canon(lx.toks)}
}

func (a *answer) tree() (*node, bool) {
	if !a.parseTried {
		a.parseTried = true
		a.root, a.parsed = parse(a.toks)
	}
	return a.root, a.parsed
}

func decide(g, p *answer) (bool, string, string) {
	switch {
	case g.canon == "":
		return false, "none", "empty gold answer"
	case p.canon == "":
		return false, "none", "no predicted answer"
	case g.bad || p.bad:
		if g.bad && p.bad && g.canon == p.canon {
			return true, "exact", ""
		}
		return false, "none", "answer too long or too deeply nested to analyse"
	case g.canon == p.canon:
		return true, "exact", ""
	}
	if letter, ok := goldChoice(g.toks); ok {
		pl, ok := predChoice(p.toks)
		if !ok {
			return false, "choice", "prediction names no single choice letter"
		}
		return pl == letter, "choice", ""
	}
	if gv, ok := fastNumber(g.toks); ok {
		if pv, ok := fastNumber(p.toks); ok {
			if smallEqual(gv, pv) {
				return true, "numeric", ""
			}
			// A decimal may still approximate a fraction, and percent or degree marks
			// allow a scaled match: leave those to the general path.
			if !gv.decimal && !pv.decimal && g.percent == p.percent && g.degree == p.degree {
				return false, "numeric", ""
			}
		}
	}
	gt, pt := isText(g.toks), isText(p.toks)
	if gt || pt {
		if gt && pt {
			return textKey(g.toks) == textKey(p.toks), "text", ""
		}
		return false, "text", "one answer is text, the other is not"
	}
	gr, ok := g.tree()
	if !ok {
		return false, "none", "could not parse gold answer"
	}
	pr, ok := p.tree()
	if !ok {
		return false, "none", "could not parse predicted answer"
	}
	c := comparer{g: g, p: p}
	eq := c.top(gr, pr)
	reason := ""
	if c.steps > maxSteps {
		eq, reason = false, "comparison budget exhausted"
	}
	return eq, methodOf(gr, pr), reason
}

type comparer struct {
	g, p  *answer
	steps int
}

func symbolLike(n *node) bool {
	switch n.op {
	case nVar:
		return true
	case nMul:
		// f(x), f^{-1}(x)
		if len(n.kids) != 2 || !n.kids[1].paren {
			return false
		}
		f := n.kids[0]
		return f.op == nVar || (f.op == nPow && f.kids[0].op == nVar)
	case nTuple:
		// (x, y) = (1, 2)
		if n.open != '(' || n.close != ')' {
			return false
		}
		for _, k := range n.kids {
			if k.op != nVar {
				return false
			}
		}
		return true
	}
	return false
}

// stripAssign turns "x = 5", "x = 2+3 = 5", "x \approx 5" and "x \in [1,2]" into their value.
func stripAssign(n *node) (*node, bool) {
	if n.op != nRel || !symbolLike(n.kids[0]) {
		return n, false
	}
	if len(n.rels) == 1 && n.rels[0] == "in" {
		return n.kids[1], true
	}
	for _, r := range n.rels {
		if r != "=" && r != "approx" {
			return n, false
		}
	}
	idx := len(n.kids) - 1
	if n.rels[len(n.rels)-1] == "approx" {
		for k := len(n.rels) - 1; k >= 0; k-- {
			if n.rels[k] == "=" {
				idx = k + 1
				break
			}
		}
	}
	return n.kids[idx], true
}

func (c *comparer) top(g, p *node) bool {
	gv, gA := stripAssign(g)
	pv, pA := stripAssign(p)
	if g.op == nRel && p.op == nRel {
		// "x = 5" and "a = 5" state the same value; "y = 2x" and "z = 2x" do not.
		if gA && pA && (sameTree(g.kids[0], p.kids[0]) || (!hasVars(gv) && !hasVars(pv))) && c.value(gv, pv, true) {
			return true
		}
		return c.relEq(g, p)
	}
	if gv.op == nRel || pv.op == nRel {
		return c.intervalsEq(gv, pv)
	}
	return c.value(gv, pv, true)
}

// sameTree reports whether two trees are written the same way (used for left-hand sides).
func sameTree(a, b *node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.op != b.op || a.name != b.name || a.lit != b.lit || len(a.kids) != len(b.kids) ||
		a.open != b.open || a.close != b.close {
		return false
	}
	for i := range a.kids {
		if !sameTree(a.kids[i], b.kids[i]) {
			return false
		}
	}
	return true
}

func (c *comparer) tick() bool {
	c.steps++
	return c.steps <= maxSteps
}

func isColl(n *node) bool { return n.op == nList || n.op == nSet }

func (c *comparer) value(a, b *node, top bool) bool {
	if !c.tick() {
		return false
	}
	a, b = expandPM(a), expandPM(b)
	switch {
	case isColl(a) || isColl(b):
		return c.collEq(a, b)
	case a.op == nUnion || b.op == nUnion || a.op == nRel || b.op == nRel:
		return c.intervalsEq(a, b)
	case a.op == nTuple || b.op == nTuple:
		return c.tupleEq(a, b)
	case a.op == nMatrix || b.op == nMatrix:
		return c.matrixEq(a, b)
	}
	if c.scalarEq(a, b) {
		return true
	}
	if !top {
		return false
	}
	if c.g.percent != c.p.percent {
		if c.g.percent && c.scalarEq(scaled(a, nil, 100), b) {
			return true
		}
		if c.p.percent && c.scalarEq(a, scaled(b, nil, 100)) {
			return true
		}
	}
	if c.g.degree != c.p.degree {
		pi := &node{op: nConst, name: "pi"}
		if c.g.degree && c.scalarEq(scaled(a, pi, 180), b) {
			return true
		}
		if c.p.degree && c.scalarEq(a, scaled(b, pi, 180)) {
			return true
		}
	}
	return false
}

func numNode(v int) *node { return &node{op: nNum, lit: strconv.Itoa(v)} }

// scaled returns n * f / den (f nil means 1).
func scaled(n, f *node, den int) *node {
	kids := []*node{n}
	if f != nil {
		kids = append(kids, f)
	}
	kids = append(kids, &node{op: nDiv, kids: []*node{numNode(1), numNode(den)}})
	return &node{op: nMul, kids: kids}
}

// elems lists the members of a collection, with "x = 1" read as 1 and ± expanded.
func elems(n *node) []*node {
	var src []*node
	if isColl(n) {
		src = n.kids
	} else {
		src = []*node{n}
	}
	out := make([]*node, 0, len(src))
	for _, k := range src {
		v, _ := stripAssign(k)
		v = expandPM(v)
		if v.op == nList && v != k {
			out = append(out, v.kids...)
		} else {
			out = append(out, v)
		}
	}
	return out
}

func parenTuple(n *node) bool { return n.op == nTuple && n.open == '(' && n.close == ')' }

func (c *comparer) collEq(a, b *node) bool {
	for _, n := range [2]*node{a, b} {
		if n.op == nMatrix || (n.op == nTuple && !parenTuple(n)) {
			return false
		}
		if n.op == nUnion || n.op == nRel {
			return c.intervalsEq(a, b)
		}
	}
	if allRel(a) || allRel(b) {
		return c.intervalsEq(a, b)
	}
	var ea, eb []*node
	ordered := parenTuple(a) || parenTuple(b)
	if ordered {
		ea, eb = tupleOrElems(a), tupleOrElems(b)
	} else {
		ea, eb = elems(a), elems(b)
	}
	if len(ea) != len(eb) || len(ea) > maxColl {
		return false
	}
	if ordered {
		for i := range ea {
			if !c.value(ea[i], eb[i], false) {
				return false
			}
		}
		return true
	}
	used := make([]bool, len(eb))
	for _, x := range ea {
		found := false
		for j, y := range eb {
			if !used[j] && c.value(x, y, false) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func tupleOrElems(n *node) []*node {
	if n.op == nTuple {
		return n.kids
	}
	return elems(n)
}

// allRel reports whether n is a list whose members are all inequalities ("x<1 or x>2").
func allRel(n *node) bool {
	if n.op != nList || len(n.kids) == 0 {
		return false
	}
	for _, k := range n.kids {
		if k.op != nRel {
			return false
		}
		if _, assign := stripAssign(k); assign {
			return false
		}
	}
	return true
}

func (c *comparer) tupleEq(a, b *node) bool {
	if intervalShaped(a) && intervalShaped(b) {
		// Interval rules: closedness at an infinite end does not matter.
		return c.intervalsEq(a, b)
	}
	if a.op == nTuple && b.op == nTuple {
		if a.open != b.open || a.close != b.close || len(a.kids) != len(b.kids) {
			return false
		}
		for i := range a.kids {
			if !c.value(a.kids[i], b.kids[i], false) {
				return false
			}
		}
		return true
	}
	t, m := a, b
	if t.op != nTuple {
		t, m = b, a
	}
	if m.op == nMatrix && parenTuple(t) && (m.rows == 1 || m.cols == 1) && len(m.kids) == len(t.kids) {
		for i := range t.kids {
			if !c.value(a.kids[i], b.kids[i], false) {
				return false
			}
		}
		return true
	}
	return false
}

func (c *comparer) matrixEq(a, b *node) bool {
	if a.op != nMatrix || b.op != nMatrix || a.rows != b.rows || a.cols != b.cols {
		return false
	}
	for i := range a.kids {
		if !c.value(a.kids[i], b.kids[i], false) {
			return false
		}
	}
	return true
}

func isScalar(n *node) bool {
	switch n.op {
	case nList, nSet, nTuple, nUnion, nMatrix, nRel:
		return false
	}
	return !hasPM(n)
}

func methodOf(g, p *node) string {
	gv, _ := stripAssign(g)
	pv, _ := stripAssign(p)
	for _, n := range [2]*node{gv, pv} {
		if n.op == nRel {
			for _, r := range n.rels {
				if r == "=" || r == "!=" || r == "approx" {
					return "equation"
				}
			}
			return "interval"
		}
	}
	for _, n := range [2]*node{gv, pv} {
		switch n.op {
		case nUnion:
			return "interval"
		case nMatrix:
			return "matrix"
		case nTuple:
			if n.open != '(' || n.close != ')' {
				return "interval"
			}
			return "tuple"
		case nList, nSet:
			return "set"
		}
		if hasPM(n) {
			return "set"
		}
	}
	if hasVars(gv) || hasVars(pv) {
		return "symbolic"
	}
	return "numeric"
}
