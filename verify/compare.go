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
	// "interval", "matrix", "equation", "ratio", "choice", "text" or "none"; and
	// "last_sentence" whenever pred's answer was taken from its final sentence (see
	// [ExtractMethod]), whatever its shape.
	Method string
	// Gold and Pred are the normalized answers that were compared.
	Gold, Pred string
	// Extracted is true when a final answer was extracted from pred.
	Extracted bool
	// Extraction names how pred's answer was found: "tag", "boxed", "statement",
	// "lead_letter" or "last_sentence"; empty when pred as a whole was the answer.
	Extraction string
	// Reason explains a not-equal verdict that was not a plain mismatch.
	Reason string
}

// Equal reports whether pred states the same answer as gold; see [Compare].
func Equal(gold, pred string) bool { return Compare(gold, pred).Equal }

// Compare decides whether pred states the same answer as gold. pred may be a whole solution
// (its final answer is extracted first, see [ExtractMethod]) or a bare answer; gold may be
// plain, in $...$, in \boxed{} or a sentence. It never panics and does bounded work for any
// input. How pred ended is not known: it is [CompareWith] with no finish reason.
func Compare(gold, pred string) (res Result) { return CompareWith(gold, pred, Options{}) }

// CompareWith is [Compare] told what is known of pred (see [Options]). A pred that was cut
// off (by its finish reason, or stopping inside math, a box or its <think>) is not equal to
// anything, with Reason saying why.
func CompareWith(gold, pred string, opt Options) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res.Equal = false
			res.Method = "none"
			res.Reason = fmt.Sprintf("internal error recovered: %v", r)
		}
	}()
	g := cleanAnswer(gold)
	if a, _, ok := ExtractMethod(gold); ok {
		g = a
	}
	p := cleanAnswer(pred)
	x := extract(pred, opt)
	if x.cut != "" {
		ga := prepare(g)
		res.Method, res.Gold, res.Reason = "none", ga.display(), x.cut
		return res
	}
	if x.method != "" {
		p = x.answer
		res.Extracted, res.Extraction = true, x.method
	}
	ga, pa := prepare(g), prepare(p)
	res.Equal, res.Method, res.Reason = decide(&ga, &pa)
	res.Gold, res.Pred = ga.display(), pa.display()
	if res.Extraction == ByLastSentence {
		res.Method = ByLastSentence
	}
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
	src        string // the answer text after normalization
	canon      string
	root       *node
	parsed     bool
	parseTried bool
}

func prepare(s string) answer { return prepareWith(s, false) }

// prepareWith normalizes and lexes one answer; decComma reads an ambiguous 3,75 as 3.75.
func prepareWith(s string, decComma bool) answer {
	s = strings.TrimSpace(s)
	if len(s) > maxAnswerLen {
		return answer{canon: s, src: s, lexed: lexed{bad: true}}
	}
	s = strings.TrimSpace(foldUnicode(unescapeLatex(cutAtTurnEnd(s))))
	lx := lex(s, decComma)
	if lx.bad {
		return answer{canon: s, src: s, lexed: lx}
	}
	lx.toks = dropPerUnit(dropUnitNote(dropApproxNote(lx.toks)))
	return answer{lexed: lx, src: s, canon: canon(lx.toks)}
}

// withTokens is a copy of a holding other tokens.
func (a *answer) withTokens(toks []token) answer {
	lx := a.lexed
	lx.toks = toks
	return answer{lexed: lx, src: a.src, canon: canon(toks)}
}

func (a *answer) tree() (*node, bool) {
	if !a.parseTried {
		a.parseTried = true
		a.root, a.parsed = parse(a.toks)
	}
	return a.root, a.parsed
}

// dropPerUnit removes a rate's unit glued to a number: "1,500/month", "45/hr". A word of two
// letters or more after the slash is a unit, never a symbol to divide by.
func dropPerUnit(toks []token) []token {
	n := len(toks)
	if n >= 3 && toks[n-1].kind == tWord && unitLike(toks[n-1].text) && isOpTok(toks[n-2], "/") && toks[n-3].kind == tNum {
		return toks[:n-2]
	}
	return toks
}

// unitLike reports a word that names a unit rather than symbols: a known unit or word, or four
// letters or more with a vowel (month, person); "6/abc" keeps its product.
func unitLike(w string) bool {
	lw := strings.ToLower(w)
	return knownWord(lw) || isShortWord(lw) && !isSepWord(token{kind: tWord, text: lw}) ||
		len(w) >= 4 && strings.ContainsAny(lw, "aeiouy") || !isASCIIWord(w)
}

// dropUnitNote removes a unit in parentheses after a number: "14 (см)", "9 (яблок).",
// "14（元）".
func dropUnitNote(toks []token) []token {
	n := len(toks)
	if n > 0 && isOpTok(toks[n-1], ".") {
		n--
	}
	if n < 4 || !isOpTok(toks[n-1], ")") {
		return toks
	}
	k := n - 2
	for k > 0 && (toks[k].kind == tWord || isOpTok(toks[k], ".") || isOpTok(toks[k], "/") || isOpTok(toks[k], "^") ||
		toks[k].kind == tNum && isOpTok(toks[k-1], "^")) {
		k-- // (см), (яб.), (см²), (km/h)
	}
	if k == n-2 || !isOpTok(toks[k], "(") || k == 0 || toks[k-1].kind != tNum || toks[k+1].kind != tWord {
		return toks
	}
	return toks[:k]
}

// dropApproxNote removes an approximation note after the answer: "(\approx 0.707)",
// "(approximately 0.71)", ", approx. 0.707", "or about 0.707".
func dropApproxNote(toks []token) []token {
	depth := 0
	for k, t := range toks {
		switch {
		case t.kind == tOp && (t.text == "(" || t.text == "["):
			depth++
		case t.kind == tOp && (t.text == ")" || t.text == "]"):
			depth--
		case t.kind == tCmd && t.text == "approx" && k > 0:
			prev := toks[k-1]
			switch {
			case depth == 1 && isOpTok(prev, "(") && isOpTok(toks[len(toks)-1], ")") && k > 1:
				return toks[:k-1]
			case depth == 0 && (isOpTok(prev, ",") || isSepWord(prev)) && k > 1:
				return toks[:k-1]
			}
		}
	}
	return toks
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
	case g.canon == p.canon && (g.src == p.src || !isChoiceGold(g)):
		return true, "exact", ""
	case g.commaAmbig || p.commaAmbig:
		return decideCommas(g, p)
	}
	return decideShapes(g, p)
}

// decideCommas settles numbers such as 3,75 that read either as a decimal comma or as a list:
// against a single value they are decimals (the answer is replaced by that reading), against a
// list, a tuple or a set they are lists; when both sides are ambiguous, both readings must
// agree.
func decideCommas(g, p *answer) (bool, string, string) {
	switch {
	case g.commaAmbig && p.commaAmbig:
		eq, m, r := decideShapes(g, p)
		gd, pd := prepareWith(g.src, true), prepareWith(p.src, true)
		if eqDec, _, _ := decideShapes(&gd, &pd); eqDec != eq {
			return false, m, "decimal comma or list: the two readings disagree"
		}
		return eq, m, r
	case g.commaAmbig && singleValue(p.toks):
		*g = prepareWith(g.src, true)
	case p.commaAmbig && singleValue(g.toks):
		*p = prepareWith(p.src, true)
	}
	return decideShapes(g, p)
}

// singleValue reports whether the tokens hold no list separator, inside brackets or not: a
// tuple, a set or an interval is not a single value.
func singleValue(toks []token) bool {
	for _, t := range toks {
		if isOpTok(t, ",") || isOpTok(t, ";") || isSepWord(t) {
			return false
		}
	}
	return true
}

func decideShapes(g, p *answer) (bool, string, string) {
	// A choice letter is decided first: "\angle C" and "\vec{C}" lose their macro in the
	// canonical string but are no choice.
	if g.canon == p.canon && g.src == p.src {
		return true, "exact", ""
	}
	if eq, method, reason, ok := decideChoice(g, p); ok {
		return eq, method, reason
	}
	if g.canon == p.canon {
		return true, "exact", ""
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
	if s, ok := unitSymbolDropped(p.toks); ok && !hasSymbols(g.toks) {
		q := p.withTokens(s)
		return decideShapes(g, &q)
	}
	if s, ok := unitSymbolDropped(g.toks); ok && !hasSymbols(p.toks) {
		q := g.withTokens(s)
		return decideShapes(&q, p)
	}
	return decideTrees(g, p)
}

func decideTrees(g, p *answer) (bool, string, string) {
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

// isChoiceGold reports a gold answer that is a choice letter.
func isChoiceGold(g *answer) bool {
	_, _, ok := goldChoice(g.toks)
	return ok
}

// decideChoice applies when the gold answer is a choice letter: the prediction must assert
// that letter and no other, or, when it names no letter, state the option's text.
func decideChoice(g, p *answer) (bool, string, string, bool) {
	letter, option, ok := goldChoice(g.toks)
	if !ok {
		return false, "", "", false
	}
	if l, n := predChoice(g.src); n != 1 || l != letter {
		return false, "", "", false // \bar{C}, \vec{B}: math on a letter, not a choice
	}
	switch pl, n := predChoice(p.src); {
	case n == 1:
		return pl == letter, "choice", "", true
	case n > 1:
		return false, "choice", "prediction names more than one choice", true
	}
	if len(option) > 0 {
		o := g.withTokens(option)
		if eq, _, _ := decideShapes(&o, p); eq {
			return true, "choice", "", true
		}
	}
	return false, "choice", "prediction names no single choice letter", true
}

// unitSymbols are one-letter units dropped after a number when the other side has no
// symbols: 3.5m², 12 m, 9.8 m/s^2, 5 h.
func unitSymbol(t token) bool {
	if t.kind != tIdent {
		return false
	}
	switch t.text {
	case "m", "g", "s", "h", "L":
		return true
	}
	return false
}

// unitSymbolDropped returns the tokens of a plain number followed by a one-letter unit, with
// the unit (and its power or "per" unit) removed.
func unitSymbolDropped(toks []token) ([]token, bool) {
	for k := 1; k < len(toks); k++ {
		if !unitSymbol(toks[k]) {
			continue
		}
		rest := toks[k+1:]
		switch {
		case len(rest) == 0:
		case len(rest) == 2 && isOpTok(rest[0], "^") && (rest[1].text == "2" || rest[1].text == "3"):
		case len(rest) == 2 && isOpTok(rest[0], "/") && unitSymbol(rest[1]):
		case len(rest) == 4 && isOpTok(rest[0], "/") && unitSymbol(rest[1]) && isOpTok(rest[2], "^") && rest[3].text == "2":
		default:
			return nil, false
		}
		if _, ok := fastNumber(toks[:k]); !ok {
			return nil, false
		}
		return toks[:k], true
	}
	return nil, false
}

// hasSymbols reports whether the tokens name a variable.
func hasSymbols(toks []token) bool {
	for _, t := range toks {
		if t.kind == tIdent && !t.fromText {
			return true
		}
	}
	return false
}

type comparer struct {
	g, p  *answer
	steps int
}

// stripAssign turns "x = 5", "x = 2+3 = 5", "x \approx 5" and "x \in [1,2]" into their value
// when the left side is a label (see isLabel).
func stripAssign(n *node) (*node, bool) {
	if n.op != nRel || !isLabel(n.kids[0]) {
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
	for k, r := range n.rels {
		if r == "approx" && k > 0 {
			idx = k // x = exact ≈ approximation: the exact part
			break
		}
	}
	return n.kids[idx], true
}

func (c *comparer) top(g, p *node) bool {
	g, p = exactPart(g), exactPart(p)
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
	a, b = evalMatrices(a), evalMatrices(b)
	if a.op == nList || b.op == nList {
		ra, la := regroup(a)
		rb, lb := regroup(b)
		a, b = ra, alignLabels(ra, la, rb, lb)
	}
	switch {
	case allRel(a) || allRel(b):
		return c.intervalsEq(a, b) // "x < 2 or x > 5", "x \ge 2 and x \le 5" against intervals
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
		v, _ := stripAssign(exactPart(k))
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
	if len(ea) > maxColl || len(eb) > maxColl {
		return false
	}
	if len(ea) != len(eb) {
		// A set of solutions named with repeats: (1,2), (1,2), (3,4) is {(1,2), (3,4)}. Lists of
		// numbers keep their count, which may be a multiplicity (1, 2, 2).
		return !ordered && isColl(a) && len(ea) >= 2 && len(eb) > len(ea) && allTuples(ea) && c.distinct(ea) && c.covers(ea, eb)
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
	gv, _ := stripAssign(exactPart(g))
	pv, _ := stripAssign(exactPart(p))
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
			if n.open == ':' {
				return "ratio"
			}
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

// evalMatrices evaluates arithmetic on explicit matrices (see matrixValue); other nodes are
// returned as they are.
func evalMatrices(n *node) *node {
	if n.op == nMatrix || !hasMatrix(n) {
		return n
	}
	if m, ok := matrixValue(n); ok {
		return m
	}
	return n
}

// distinct reports whether no two members of es are equal.
func (c *comparer) distinct(es []*node) bool {
	for i := range es {
		for j := 0; j < i; j++ {
			if c.value(es[j], es[i], false) {
				return false
			}
		}
	}
	return true
}

// covers reports whether every member of gold is named in pred and pred names nothing else.
func (c *comparer) covers(gold, pred []*node) bool {
	named := make([]bool, len(gold))
	for _, y := range pred {
		found := false
		for i, x := range gold {
			if c.value(x, y, false) {
				named[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, n := range named {
		if !n {
			return false
		}
	}
	return true
}

func allTuples(es []*node) bool {
	for _, e := range es {
		if !parenTuple(e) {
			return false
		}
	}
	return true
}
