package verify

import "strings"

const (
	maxDepth = 80
	maxNodes = 1500
)

type nodeOp uint8

const (
	nNum    nodeOp = iota + 1 // lit
	nVar                      // name
	nConst                    // name: pi, e, i, inf
	nAdd                      // kids summed
	nMul                      // kids multiplied
	nNeg                      // -kids[0]
	nDiv                      // kids[0] / kids[1]
	nPow                      // kids[0] ^ kids[1]
	nFunc                     // name(kids...); log with a base has base in kids[1]
	nFact                     // kids[0]!
	nBinom                    // binom(kids[0], kids[1])
	nAbs                      // |kids[0]|
	nRoot                     // kids[0] ^ (1/kids[1]); kids[1] nil means square root
	nPM                       // kids[0] ± kids[1]; kids[0] may be nil; name "mp" for ∓
	nRel                      // chain kids[0] rels[0] kids[1] ...
	nList                     // bare list: "1, 2", "1 or 2", {1,2}
	nSet                      // \{ ... \}
	nTuple                    // bracketed sequence; open, close
	nUnion                    // A \cup B ...
	nMatrix                   // rows x cols, kids row-major
)

// wordVar marks, in lit, a variable that was written as a word ("total", "Let").
const wordVar = "word"

type node struct {
	op    nodeOp
	name  string
	lit   string
	kids  []*node
	rels  []string
	open  byte
	close byte
	rows  int
	cols  int
	paren bool // written inside its own parentheses
}

type parseBail struct{}

type parser struct {
	slab  []node // nodes are carved from chunks to save allocations
	toks  []token
	pos   int
	depth int
	nodes int
	abs   int
}

// parse builds the answer tree. A bare list of several items becomes an nList.
func parse(toks []token) (root *node, ok bool) {
	if len(toks) == 0 {
		return nil, false
	}
	p := &parser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(parseBail); !is {
				panic(r)
			}
			root, ok = nil, false
		}
	}()
	items := p.parseSeq(nil)
	if p.pos != len(p.toks) || len(items) == 0 {
		return nil, false
	}
	if len(items) == 1 {
		return items[0], true
	}
	n := p.mk(nList)
	n.kids = items
	if joinedByAnd(toks) {
		n.name = "and"
	}
	return n, true
}

// joinedByAnd reports whether the separators between the top-level items are the word "and"
// or commas, never "or" ("x \ge 2 \text{ and } x \le 5", "x > -2, x \le 3"), so that
// relations may hold together.
func joinedByAnd(toks []token) bool {
	depth, and := 0, false
	for _, t := range toks {
		switch {
		case t.kind == tOp && (t.text == "(" || t.text == "[" || t.text == "{"), t.kind == tCmd && t.text == "{":
			depth++
		case t.kind == tOp && (t.text == ")" || t.text == "]" || t.text == "}"), t.kind == tCmd && t.text == "}":
			depth--
		case depth != 0:
		case isSepWord(t):
			if !strings.EqualFold(t.text, "and") {
				return false
			}
			and = true
		case t.kind == tOp && t.text == ",":
			and = true
		case t.kind == tOp && t.text == ";", t.kind == tCmd && t.text == "\\":
			return false
		}
	}
	return and
}

func (p *parser) bail() { panic(parseBail{}) }

func (p *parser) mk(op nodeOp) *node {
	p.nodes++
	if p.nodes > maxNodes {
		p.bail()
	}
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]node, 0, 16)
	}
	p.slab = append(p.slab, node{op: op})
	return &p.slab[len(p.slab)-1]
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}

func (p *parser) peekAt(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return token{}
}

func (p *parser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == s
}

func (p *parser) isCmd(s string) bool {
	t := p.peek()
	return t.kind == tCmd && t.text == s
}

func (p *parser) expectOp(s string) {
	if !p.isOp(s) {
		p.bail()
	}
	p.pos++
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.bail()
	}
}

func (p *parser) leave() { p.depth-- }

func isSepWord(t token) bool {
	return t.kind == tWord && (strings.EqualFold(t.text, "and") || strings.EqualFold(t.text, "or"))
}

func (p *parser) atSeparator() bool {
	t := p.peek()
	switch t.kind {
	case tOp:
		return t.text == "," || t.text == ";"
	case tCmd:
		return t.text == "\\"
	case tWord:
		return isSepWord(t)
	}
	return false
}

// parseSeq parses items separated by commas, semicolons, "and", "or" until stop says so or
// the tokens run out.
func (p *parser) parseSeq(stop func(token) bool) []*node {
	p.enter()
	defer p.leave()
	var items []*node
	for p.pos < len(p.toks) {
		if stop != nil && stop(p.peek()) {
			break
		}
		items = append(items, p.parseItem())
		if p.pos >= len(p.toks) || (stop != nil && stop(p.peek())) {
			break
		}
		if !p.atSeparator() {
			p.bail()
		}
		for p.atSeparator() {
			p.pos++
		}
	}
	return items
}

func (p *parser) parseItem() *node {
	n := p.parseRel()
	if p.isCmd("cup") {
		u := p.mk(nUnion)
		u.kids = append(u.kids, n)
		for p.isCmd("cup") {
			p.pos++
			u.kids = append(u.kids, p.parseRel())
		}
		n = u
	}
	p.dropUnits()
	return n
}

// meaningWord reports words that change a value, so they can never be dropped as a unit.
func meaningWord(w string) bool {
	switch strings.ToLower(w) {
	case "not", "no", "never", "none", "except", "than", "less", "more", "fewer", "greater",
		"hundred", "hundreds", "thousand", "thousands", "million", "millions", "billion", "billions",
		"trillion", "dozen", "dozens", "squared", "cubed", "times", "plus", "minus", "over",
		"divided", "half", "halves", "twice", "thrice", "double", "triple", "impossible",
		"undefined", "infinite", "to", "out", "with", "remainder", "if", "when", "unless", "but",
		"only", "at", "least", "most", "between", "from", "negative", "positive", "am", "pm":
		return true
	}
	return false
}

// dropUnits skips trailing unit words such as "cm", "\text{ m}^2" or "miles per hour".
func (p *parser) dropUnits() {
	for {
		t := p.peek()
		isUnit := (t.kind == tWord && !isSepWord(t) && !meaningWord(t.text)) || (t.kind == tIdent && t.fromText)
		if !isUnit {
			return
		}
		p.pos++
		if p.isOp("^") && p.peekAt(1).kind == tNum {
			p.pos += 2
		}
		if p.isOp("/") && (p.peekAt(1).kind == tWord || p.peekAt(1).kind == tIdent) {
			p.pos += 2 // km/h, m/s
		}
		if p.isOp(".") && (p.peekAt(1).kind == tWord || p.peekAt(1).fromText) {
			p.pos++ // sq. ft
		}
		if p.isOp(".") && p.pos+1 == len(p.toks) {
			p.pos++
		}
	}
}

func relOf(t token) string {
	switch t.kind {
	case tOp:
		switch t.text {
		case "=", "<", ">", "<=", ">=", "!=":
			return t.text
		}
	case tCmd:
		switch t.text {
		case "approx", "in":
			return t.text
		}
	}
	return ""
}

func (p *parser) parseRel() *node {
	first := p.parseRatio()
	r := relOf(p.peek())
	if r == "" {
		return first
	}
	n := p.mk(nRel)
	n.kids = append(n.kids, first)
	for r != "" {
		p.pos++
		n.rels = append(n.rels, r)
		if r == "in" {
			n.kids = append(n.kids, p.parseUnionOperand())
		} else {
			n.kids = append(n.kids, p.parseRatio())
		}
		r = relOf(p.peek())
	}
	return n
}

func (p *parser) parseUnionOperand() *node {
	n := p.parseExpr()
	if !p.isCmd("cup") {
		return n
	}
	u := p.mk(nUnion)
	u.kids = append(u.kids, n)
	for p.isCmd("cup") {
		p.pos++
		u.kids = append(u.kids, p.parseExpr())
	}
	return u
}

func (p *parser) parseExpr() *node {
	p.enter()
	defer p.leave()
	first := p.parseTerm()
	var sum *node
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && (t.text == "+" || t.text == "-"):
			p.pos++
			term := p.parseTerm()
			if t.text == "-" {
				neg := p.mk(nNeg)
				neg.kids = []*node{term}
				term = neg
			}
			if sum == nil {
				sum = p.mk(nAdd)
				sum.kids = []*node{first}
			}
			sum.kids = append(sum.kids, term)
		case t.kind == tCmd && (t.text == "pm" || t.text == "mp"):
			p.pos++
			term := p.parseTerm()
			left := first
			if sum != nil {
				left = sum
			}
			pm := p.mk(nPM)
			pm.name = t.text
			pm.kids = []*node{left, term}
			first, sum = pm, nil
		default:
			if sum != nil {
				return sum
			}
			return first
		}
	}
}

func (p *parser) parseTerm() *node {
	p.enter()
	defer p.leave()
	n := p.parseUnary()
	var prod *node
	add := func(f *node) {
		if prod == nil {
			prod = p.mk(nMul)
			prod.kids = []*node{n}
		}
		prod.kids = append(prod.kids, f)
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && t.text == "*":
			p.pos++
			add(p.parseUnary())
		case t.kind == tOp && t.text == "/":
			p.pos++
			d := p.parseUnary()
			num := n
			if prod != nil {
				num = prod
			}
			div := p.mk(nDiv)
			div.kids = []*node{num, d}
			n, prod = div, nil
		case p.canStartImplicit(t):
			add(p.parsePower())
		default:
			if prod != nil {
				return prod
			}
			return n
		}
	}
}

func isPrimaryCmd(name string) bool {
	switch name {
	case "frac", "sqrt", "cbrt", "binom", "pi", "infty", "lfloor", "lceil", "emptyset", "varnothing":
		return true
	}
	return isFuncName(name) || strings.HasPrefix(name, "begin:")
}

func (p *parser) canStartImplicit(t token) bool {
	switch t.kind {
	case tNum:
		return t.glued // \frac123: the 3 multiplies

	case tIdent:
		return !t.fromText
	case tCmd:
		return isPrimaryCmd(t.text)
	case tOp:
		switch t.text {
		case "(", "{":
			return true
		case "|":
			return p.abs == 0
		}
	}
	return false
}

func (p *parser) parseUnary() *node {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch {
	case t.kind == tOp && t.text == "-":
		p.pos++
		n := p.mk(nNeg)
		n.kids = []*node{p.parseUnary()}
		return n
	case t.kind == tOp && t.text == "+":
		p.pos++
		return p.parseUnary()
	case t.kind == tCmd && (t.text == "pm" || t.text == "mp"):
		p.pos++
		n := p.mk(nPM)
		n.name = t.text
		n.kids = []*node{nil, p.parseUnary()}
		return n
	}
	return p.parsePower()
}

func (p *parser) parsePower() *node {
	p.enter()
	defer p.leave()
	base := p.parsePostfix()
	if p.isOp("^") {
		p.pos++
		e := p.parseExponent()
		n := p.mk(nPow)
		n.kids = []*node{base, e}
		base = n
		for p.isOp("!") {
			p.pos++
			f := p.mk(nFact)
			f.kids = []*node{base}
			base = f
		}
	}
	return base
}

func (p *parser) parseExponent() *node {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch {
	case t.kind == tOp && t.text == "{":
		return p.parseGroup("{", "}")
	case t.kind == tOp && t.text == "-":
		p.pos++
		n := p.mk(nNeg)
		n.kids = []*node{p.parseExponent()}
		return n
	case t.kind == tOp && t.text == "+":
		p.pos++
		return p.parseExponent()
	}
	return p.parsePower()
}

func (p *parser) parsePostfix() *node {
	n := p.parsePrimary()
	for {
		switch {
		case p.isOp("!"):
			p.pos++
			f := p.mk(nFact)
			f.kids = []*node{n}
			n = f
		case p.isOp("'"):
			if n.op != nVar {
				p.bail()
			}
			p.pos++
			n.name += "'"
		default:
			return n
		}
	}
}

// parseGroup parses open ... close holding exactly one item.
func (p *parser) parseGroup(open, close string) *node {
	p.expectOp(open)
	items := p.parseSeq(func(t token) bool { return t.kind == tOp && t.text == close })
	p.expectOp(close)
	if len(items) != 1 {
		p.bail()
	}
	return items[0]
}

func isIntLit(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return len(s) > 0
}

func (p *parser) parsePrimary() *node {
	p.enter()
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tNum:
		p.pos++
		if p.isOp("_") {
			// A base subscript such as 204_5 stays an opaque symbol.
			p.pos++
			n := p.mk(nVar)
			n.name = t.text + "_" + p.readSubscript()
			return n
		}
		n := p.mk(nNum)
		n.lit = t.text
		if isIntLit(t.text) && p.plainMixedAhead() {
			// "2 1/2" written in plain text.
			whole, num, den := n, p.mk(nNum), p.mk(nNum)
			num.lit, den.lit = p.toks[p.pos].text, p.toks[p.pos+2].text
			p.pos += 3
			f := p.mk(nDiv)
			f.kids = []*node{num, den}
			m := p.mk(nAdd)
			m.kids = []*node{whole, f}
			return m
		}
		if isIntLit(t.text) && p.isCmd("frac") && p.mixedFracAhead() {
			f := p.parsePrimary()
			m := p.mk(nAdd)
			m.kids = []*node{n, f}
			return m
		}
		return n
	case tIdent:
		p.pos++
		name := t.text
		if p.isOp("_") {
			p.pos++
			name += "_" + p.readSubscript()
		}
		if name == "e" || name == "i" {
			n := p.mk(nConst)
			n.name = name
			return n
		}
		n := p.mk(nVar)
		n.name = name
		return n
	case tWord:
		if isSepWord(t) {
			p.bail()
		}
		p.pos++
		n := p.mk(nVar)
		n.name = strings.ToLower(t.text)
		n.lit = wordVar
		return n
	case tCmd:
		return p.parseCmd(t)
	case tOp:
		switch t.text {
		case "(", "[":
			return p.parseBracket()
		case "{":
			p.pos++
			items := p.parseSeq(func(t token) bool { return t.kind == tOp && t.text == "}" })
			p.expectOp("}")
			if len(items) == 0 {
				p.bail()
			}
			if len(items) == 1 {
				return items[0]
			}
			n := p.mk(nList)
			n.kids = items
			return n
		case "|":
			p.pos++
			p.abs++
			e := p.parseExpr()
			p.abs--
			p.expectOp("|")
			n := p.mk(nAbs)
			n.kids = []*node{e}
			return n
		}
	}
	p.bail()
	return nil
}

// plainMixedAhead reports whether "int/int" follows after a space and ends the item.
func (p *parser) plainMixedAhead() bool {
	a, slash, b := p.tokAt(p.pos), p.tokAt(p.pos+1), p.tokAt(p.pos+2)
	if a.kind != tNum || !a.space || a.newline || !isIntLit(a.text) || !isOpTok(slash, "/") ||
		b.kind != tNum || !isIntLit(b.text) || !properFraction(a.text, b.text) {
		return false
	}
	after := p.tokAt(p.pos + 3)
	return after.kind == 0 || (after.kind == tOp && (after.text == "," || after.text == ";")) || isSepWord(after)
}

// properFraction reports whether num/den is a proper fraction, as in a mixed number.
func properFraction(num, den string) bool {
	a, ok1 := smallLit(num)
	b, ok2 := smallLit(den)
	return ok1 && ok2 && b.num > 0 && a.num < b.num
}

// mixedFracAhead reports whether \frac{int}{int} follows (a mixed number like 2\frac{1}{2}).
func (p *parser) mixedFracAhead() bool {
	k := p.pos + 1
	var parts [2]string
	for arg := 0; arg < 2; arg++ {
		t := p.tokAt(k)
		if t.kind == tOp && t.text == "{" {
			if p.tokAt(k+1).kind != tNum || !isIntLit(p.tokAt(k+1).text) || !(p.tokAt(k+2).kind == tOp && p.tokAt(k+2).text == "}") {
				return false
			}
			parts[arg] = p.tokAt(k + 1).text
			k += 3
			continue
		}
		if t.kind != tNum || !isIntLit(t.text) {
			return false
		}
		if arg == 0 && len(t.text) == 2 {
			return properFraction(t.text[:1], t.text[1:]) // \frac12
		}
		if len(t.text) != 1 {
			return false
		}
		parts[arg] = t.text
		k++
	}
	return properFraction(parts[0], parts[1])
}

func (p *parser) tokAt(k int) token {
	if k >= 0 && k < len(p.toks) {
		return p.toks[k]
	}
	return token{}
}

func (p *parser) parseBracket() *node {
	open := p.peek().text[0]
	p.pos++
	items := p.parseSeq(func(t token) bool { return t.kind == tOp && (t.text == ")" || t.text == "]") })
	t := p.peek()
	if t.kind != tOp || (t.text != ")" && t.text != "]") || len(items) == 0 {
		p.bail()
	}
	p.pos++
	close := t.text[0]
	if len(items) == 1 {
		if (open == '(' && close == ')') || (open == '[' && close == ']') {
			items[0].paren = true
			return items[0]
		}
		p.bail()
	}
	n := p.mk(nTuple)
	n.open, n.close = open, close
	n.kids = items
	return n
}

// readSubscript returns the text of a subscript: a braced group or a single token.
func (p *parser) readSubscript() string {
	t := p.peek()
	if t.kind == tOp && t.text == "{" {
		p.pos++
		start := p.pos
		depth := 1
		for p.pos < len(p.toks) {
			u := p.peek()
			if u.kind == tOp && u.text == "{" {
				depth++
			} else if u.kind == tOp && u.text == "}" {
				depth--
				if depth == 0 {
					break
				}
			}
			p.pos++
		}
		if p.pos >= len(p.toks) {
			p.bail()
		}
		s := canon(p.toks[start:p.pos])
		p.pos++
		if s == "" {
			p.bail()
		}
		return s
	}
	switch t.kind {
	case tNum, tIdent, tWord:
		p.pos++
		return t.text
	case tCmd:
		p.pos++
		return "\\" + t.text
	}
	p.bail()
	return ""
}

// readArg reads one LaTeX macro argument: a braced group, one digit, one letter or a command.
func (p *parser) readArg() *node {
	t := p.peek()
	switch t.kind {
	case tOp:
		switch t.text {
		case "{":
			return p.parseGroup("{", "}")
		case "(":
			return p.parseGroup("(", ")") // \sqrt(2), written as in plain notation
		}
	case tNum:
		if len(t.text) > 1 && isDigit(t.text[0]) {
			n := p.mk(nNum)
			n.lit = t.text[:1]
			p.toks[p.pos].text = t.text[1:]
			p.toks[p.pos].space = false
			p.toks[p.pos].glued = true
			return n
		}
		p.pos++
		n := p.mk(nNum)
		n.lit = t.text
		return n
	case tIdent, tCmd:
		return p.parsePrimary()
	}
	p.bail()
	return nil
}

func (p *parser) parseCmd(t token) *node {
	name := t.text
	switch name {
	case "pi":
		p.pos++
		n := p.mk(nConst)
		n.name = "pi"
		return n
	case "infty":
		p.pos++
		n := p.mk(nConst)
		n.name = "inf"
		return n
	case "frac":
		p.pos++
		a := p.readArg()
		b := p.readArg()
		n := p.mk(nDiv)
		n.kids = []*node{a, b}
		return n
	case "binom":
		p.pos++
		a := p.readArg()
		b := p.readArg()
		n := p.mk(nBinom)
		n.kids = []*node{a, b}
		return n
	case "sqrt":
		p.pos++
		var idx *node
		if p.isOp("[") {
			p.pos++
			idx = p.parseExpr()
			p.expectOp("]")
		}
		arg := p.readArg()
		n := p.mk(nRoot)
		n.kids = []*node{arg, idx}
		return n
	case "cbrt":
		p.pos++
		arg := p.readArg()
		n := p.mk(nRoot)
		n.kids = []*node{arg, numNode(3)}
		return n
	case "emptyset", "varnothing":
		p.pos++
		return p.mk(nSet)
	case "{":
		p.pos++
		items := p.parseSeq(func(t token) bool { return t.kind == tCmd && t.text == "}" })
		if !p.isCmd("}") {
			p.bail()
		}
		p.pos++
		n := p.mk(nSet)
		n.kids = items
		return n
	case "lfloor", "lceil":
		p.pos++
		e := p.parseExpr()
		want := "rfloor"
		fn := "floor"
		if name == "lceil" {
			want, fn = "rceil", "ceil"
		}
		if !p.isCmd(want) {
			p.bail()
		}
		p.pos++
		n := p.mk(nFunc)
		n.name = fn
		n.kids = []*node{e}
		return n
	}
	if strings.HasPrefix(name, "begin:") {
		return p.parseEnv(strings.TrimPrefix(name, "begin:"))
	}
	if isFuncName(name) {
		return p.parseFunc(name)
	}
	p.bail()
	return nil
}

func isMatrixEnv(s string) bool {
	switch s {
	case "matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "smallmatrix", "array":
		return true
	}
	return false
}

func (p *parser) parseEnv(env string) *node {
	if !isMatrixEnv(env) {
		p.bail()
	}
	p.pos++
	if env == "array" && p.isOp("{") {
		depth := 0
		for p.pos < len(p.toks) {
			t := p.peek()
			p.pos++
			if t.kind == tOp && t.text == "{" {
				depth++
			} else if t.kind == tOp && t.text == "}" {
				depth--
				if depth == 0 {
					break
				}
			}
		}
	}
	end := "end:" + env
	var rows [][]*node
	var row []*node
	for {
		if p.pos >= len(p.toks) {
			p.bail()
		}
		if p.isCmd(end) {
			p.pos++
			break
		}
		if p.isCmd("\\") {
			p.pos++
			if len(row) > 0 {
				rows = append(rows, row)
			}
			row = nil
			continue
		}
		row = append(row, p.parseRel())
		switch {
		case p.isOp("&"):
			p.pos++
		case p.isCmd("\\"), p.isCmd(end):
		default:
			p.bail()
		}
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		p.bail()
	}
	n := p.mk(nMatrix)
	n.rows, n.cols = len(rows), len(rows[0])
	for _, r := range rows {
		if len(r) != n.cols {
			p.bail()
		}
		n.kids = append(n.kids, r...)
	}
	return n
}

// inverseTrig names the inverse of a trigonometric function (sin^{-1} is arcsin).
func inverseTrig(name string) (string, bool) {
	switch name {
	case "sin":
		return "arcsin", true
	case "cos":
		return "arccos", true
	case "tan":
		return "arctan", true
	case "sec":
		return "arcsec", true
	case "csc":
		return "arccsc", true
	case "cot":
		return "arccot", true
	}
	return "", false
}

func (p *parser) parseFunc(name string) *node {
	p.pos++
	switch name {
	case "asin":
		name = "arcsin"
	case "acos":
		name = "arccos"
	case "atan":
		name = "arctan"
	}
	var base, power *node
	if p.isOp("_") {
		p.pos++
		base = p.readArg()
	}
	if p.isOp("^") {
		p.pos++
		power = p.parseExponent()
		if inv, ok := inverseTrig(name); ok && isMinusOne(power) {
			name, power = inv, nil
		}
	}
	var args []*node
	switch {
	case p.isOp("("):
		p.pos++
		args = p.parseSeq(func(t token) bool { return t.kind == tOp && t.text == ")" })
		p.expectOp(")")
	case p.isOp("{"):
		args = []*node{p.parseGroup("{", "}")}
	default:
		args = []*node{p.parseImplicitArg()}
	}
	if len(args) == 0 {
		p.bail()
	}
	if len(args) > 1 && name != "max" && name != "min" && name != "gcd" && name != "lcm" {
		p.bail()
	}
	n := p.mk(nFunc)
	n.name = name
	n.kids = args
	if base != nil {
		if name != "log" {
			p.bail()
		}
		n.kids = append(n.kids, base)
	}
	if power == nil && p.isOp("^") {
		p.pos++
		power = p.parseExponent()
	}
	if power != nil {
		pw := p.mk(nPow)
		pw.kids = []*node{n, power}
		return pw
	}
	return n
}

func isMinusOne(n *node) bool {
	return n != nil && n.op == nNeg && n.kids[0].op == nNum && n.kids[0].lit == "1"
}

// parseImplicitArg reads a function argument written without parentheses: "\sin 2x" is
// sin(2x), "\sin x \cos x" is sin(x)cos(x).
func (p *parser) parseImplicitArg() *node {
	first := p.parseUnary()
	var prod *node
	for {
		t := p.peek()
		if !p.canStartImplicit(t) || (t.kind == tCmd && isFuncName(t.text)) || (t.kind == tOp && t.text == "(") {
			break
		}
		if prod == nil {
			prod = p.mk(nMul)
			prod.kids = []*node{first}
		}
		prod.kids = append(prod.kids, p.parsePower())
	}
	if prod != nil {
		return prod
	}
	return first
}

// parseRatio reads a ratio "3:8" or "a:b:c" as a tuple with ':' brackets.
func (p *parser) parseRatio() *node {
	first := p.parseExpr()
	if !p.isOp(":") {
		return first
	}
	n := p.mk(nTuple)
	n.open, n.close = ':', ':'
	n.kids = []*node{first}
	for p.isOp(":") {
		p.pos++
		n.kids = append(n.kids, p.parseExpr())
	}
	return n
}
