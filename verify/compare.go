package verify

import (
	"fmt"
	"math"
	"math/big"
	"math/cmplx"
	"sort"
	"strconv"
	"strings"
)

// Tolerances; POLICY.md explains them.
const (
	relTol    = 1e-8  // relative tolerance between two exact forms evaluated in floating point
	absTol    = 1e-10 // absolute tolerance for values near zero
	minSigDig = 6     // a decimal approximation needs this many significant digits
	nPoints   = 8     // evaluation points for expressions with variables
	minValid  = 4     // points where both sides must be finite
	maxColl   = 32    // elements in a set or list compared without order
	maxSteps  = 4000  // element comparisons per Compare call
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
	g := gold
	if a, ok := Extract(gold); ok {
		g = a
	}
	p := pred
	if a, ok := Extract(pred); ok {
		p = a
		res.Extracted = true
	}
	ga, pa := prepare(g), prepare(p)
	res.Gold, res.Pred = ga.canon, pa.canon
	res.Equal, res.Method, res.Reason = decide(&ga, &pa)
	return res
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

// goldChoice recognises a multiple-choice gold answer: A, (A), A), A.
func goldChoice(toks []token) (byte, bool) {
	switch len(toks) {
	case 1:
		return choiceLetter(toks[0], false)
	case 2:
		if toks[1].kind == tOp && (toks[1].text == ")" || toks[1].text == ".") {
			return choiceLetter(toks[0], true)
		}
	case 3:
		if isOpTok(toks[0], "(") && isOpTok(toks[2], ")") {
			return choiceLetter(toks[1], true)
		}
	}
	// "(C) 15": a choice letter with its option text.
	if len(toks) > 3 && isOpTok(toks[0], "(") && isOpTok(toks[2], ")") {
		if l, ok := choiceLetter(toks[1], false); ok {
			return l, true
		}
	}
	return 0, false
}

func isOpTok(t token, s string) bool { return t.kind == tOp && t.text == s }

func choiceLetter(t token, wrapped bool) (byte, bool) {
	if t.kind != tIdent || len(t.text) != 1 {
		return 0, false
	}
	c := t.text[0]
	if c >= 'A' && c <= 'J' {
		return c, true
	}
	if wrapped && c >= 'a' && c <= 'j' {
		return c - 32, true
	}
	return 0, false
}

// predChoice finds the one choice letter a prediction names: "(B)", "B)", "B. 42", "Option B".
func predChoice(toks []token) (byte, bool) {
	i := 0
	for i < len(toks) && toks[i].kind == tWord {
		switch strings.ToLower(toks[i].text) {
		case "option", "choice", "answer", "is", "the", "correct":
			i++
			continue
		}
		break
	}
	var letter byte
	var next int
	switch {
	case i+2 < len(toks) && isOpTok(toks[i], "(") && isOpTok(toks[i+2], ")"):
		l, ok := choiceLetter(toks[i+1], true)
		if !ok {
			return 0, false
		}
		letter, next = l, i+3
	case i+1 < len(toks) && isOpTok(toks[i+1], ")"):
		l, ok := choiceLetter(toks[i], true)
		if !ok {
			return 0, false
		}
		letter, next = l, i+2
	case i < len(toks):
		l, ok := choiceLetter(toks[i], false)
		if !ok {
			return 0, false
		}
		letter, next = l, i+1
		if next < len(toks) {
			t := toks[next]
			if t.kind != tOp || (t.text != "." && t.text != ":" && t.text != ",") {
				return 0, false
			}
		}
	default:
		return 0, false
	}
	for k := next; k+2 < len(toks); k++ {
		if isOpTok(toks[k], "(") && isOpTok(toks[k+2], ")") {
			if l, ok := choiceLetter(toks[k+1], false); ok && l != letter {
				return 0, false
			}
		}
	}
	return letter, true
}

// isText reports whether an answer is words only (a name, "yes", "no solution").
func isText(toks []token) bool {
	word := false
	for _, t := range toks {
		switch t.kind {
		case tWord:
			if !isSepWord(t) {
				word = true
			}
		case tIdent:
		case tOp:
			switch t.text {
			case "(", ")", ",", ".", ":", ";", "!", "?", "'", "-":
			default:
				return false
			}
		default:
			return false
		}
	}
	return word
}

func textKey(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		if t.kind == tWord || t.kind == tIdent {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.ToLower(t.text))
		}
	}
	return b.String()
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
		if gA && pA && c.value(gv, pv, true) {
			return true
		}
		return c.relEq(g, p)
	}
	if gv.op == nRel || pv.op == nRel {
		return c.intervalsEq(gv, pv)
	}
	return c.value(gv, pv, true)
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

func intervalShaped(n *node) bool {
	return n.op == nTuple && len(n.kids) == 2 && (n.open == '(' || n.open == '[') && (n.close == ')' || n.close == ']')
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

// piece is one interval, or a finite set inside a union.
type piece struct {
	lo, hi   *node
	loC, hiC bool
	set      *node
}

func infNode(neg bool) *node {
	n := &node{op: nConst, name: "inf"}
	if neg {
		return &node{op: nNeg, kids: []*node{n}}
	}
	return n
}

func toPieces(n *node, depth int) ([]piece, bool) {
	if depth > 8 {
		return nil, false
	}
	switch n.op {
	case nTuple:
		if len(n.kids) == 2 && (n.open == '(' || n.open == '[') && (n.close == ')' || n.close == ']') {
			return []piece{{lo: n.kids[0], hi: n.kids[1], loC: n.open == '[', hiC: n.close == ']'}}, true
		}
	case nSet:
		return []piece{{set: n}}, true
	case nUnion, nList:
		var out []piece
		for _, k := range n.kids {
			ps, ok := toPieces(k, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, ps...)
		}
		return out, true
	case nRel:
		if len(n.rels) == 1 && n.rels[0] == "in" && symbolLike(n.kids[0]) {
			return toPieces(n.kids[1], depth+1)
		}
		if p, ok := ineqPiece(n); ok {
			return []piece{p}, true
		}
	}
	return nil, false
}

func flipRel(r string) string {
	switch r {
	case ">":
		return "<"
	case ">=":
		return "<="
	case "<":
		return ">"
	case "<=":
		return ">="
	}
	return r
}

// ineqPiece reads "x > 2", "2 < x", "1 < x <= 3" as an interval.
func ineqPiece(n *node) (piece, bool) {
	kids, rels := n.kids, n.rels
	if rels[0] == ">" || rels[0] == ">=" {
		k2 := make([]*node, len(kids))
		r2 := make([]string, len(rels))
		for i := range kids {
			k2[len(kids)-1-i] = kids[i]
		}
		for i := range rels {
			r2[len(rels)-1-i] = flipRel(rels[i])
		}
		kids, rels = k2, r2
	}
	for _, r := range rels {
		if r != "<" && r != "<=" {
			return piece{}, false
		}
	}
	switch len(kids) {
	case 2:
		if kids[0].op == nVar && !hasVars(kids[1]) {
			return piece{lo: infNode(true), hi: kids[1], hiC: rels[0] == "<="}, true
		}
		if kids[1].op == nVar && !hasVars(kids[0]) {
			return piece{lo: kids[0], hi: infNode(false), loC: rels[0] == "<="}, true
		}
	case 3:
		if kids[1].op == nVar && !hasVars(kids[0]) && !hasVars(kids[2]) {
			return piece{lo: kids[0], hi: kids[2], loC: rels[0] == "<=", hiC: rels[1] == "<="}, true
		}
	}
	return piece{}, false
}

func (c *comparer) intervalsEq(a, b *node) bool {
	pa, ok := toPieces(a, 0)
	if !ok {
		return false
	}
	pb, ok := toPieces(b, 0)
	if !ok || len(pa) != len(pb) || len(pa) > maxColl {
		return false
	}
	used := make([]bool, len(pb))
	for _, x := range pa {
		found := false
		for j, y := range pb {
			if !used[j] && c.pieceEq(x, y) {
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

func (c *comparer) pieceEq(x, y piece) bool {
	if !c.tick() {
		return false
	}
	if (x.set == nil) != (y.set == nil) {
		return false
	}
	if x.set != nil {
		return c.collEq(x.set, y.set)
	}
	if !c.scalarEq(x.lo, y.lo) || !c.scalarEq(x.hi, y.hi) {
		return false
	}
	if _, inf := infSign(x.lo); !inf && x.loC != y.loC {
		return false
	}
	if _, inf := infSign(x.hi); !inf && x.hiC != y.hiC {
		return false
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
	for k := 0; k < nPoints; k++ {
		e.fill(k)
		fv, hv := cval(f, e), cval(h, e)
		if !finite(fv) || !finite(hv) {
			if finite(fv) != finite(hv) {
				return false
			}
			continue
		}
		fz, hz := cmplx.Abs(fv) <= absTol, cmplx.Abs(hv) <= absTol
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
		} else if !near(r, ratio, 1e-7, 0) {
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
		va, vb := cval(a, nil), cval(b, nil)
		if !finite(va) || !finite(vb) {
			return false
		}
		if near(va, vb, relTol, absTol) {
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
		va, vb := cval(a, e), cval(b, e)
		fa, fb := finite(va), finite(vb)
		if !fa || !fb {
			if fa != fb {
				return false
			}
			continue
		}
		if !near(va, vb, relTol, absTol) {
			return false
		}
		valid++
	}
	return valid >= minValid
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
