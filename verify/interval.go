package verify

func intervalShaped(n *node) bool {
	return n.op == nTuple && len(n.kids) == 2 && (n.open == '(' || n.open == '[') && (n.close == ')' || n.close == ']')
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
	case nList:
		if n.name == "and" && allRel(n) {
			return bothHold(n, depth)
		}
		fallthrough
	case nUnion:
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
		if len(n.rels) == 1 && n.rels[0] == "in" && isLabel(n.kids[0]) {
			return toPieces(n.kids[1], depth+1)
		}
		if p, ok := ineqPiece(n); ok {
			return []piece{p}, true
		}
		if ps, ok := absPieces(n); ok {
			return ps, true
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
