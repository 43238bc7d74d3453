package verify

import "strings"

// isLabel reports whether n can name what an answer gives, as the left side of "AB = 4":
// a symbol (also subscripted), a product of symbols (AB), a ratio or fraction of labels
// (P:Q, \frac{XY}{YZ}), an absolute value (|v|), a function application (f(x), f^{-1}(x)) or
// a tuple of symbols ((x, y)). A left side with a number in it is never a label.
func isLabel(n *node) bool {
	switch n.op {
	case nVar:
		return !strings.ContainsAny(n.name[:1], "0123456789")
	case nMul:
		if symbolsOnly(n.kids) {
			return true
		}
		// f(x), f^{-1}(x)
		if len(n.kids) != 2 || !n.kids[1].paren || n.kids[1].op != nVar {
			return false
		}
		f := n.kids[0]
		return f.op == nVar || (f.op == nPow && f.kids[0].op == nVar && isMinusOne(f.kids[1]))
	case nDiv:
		return isSymbolProduct(n.kids[0]) && isSymbolProduct(n.kids[1])
	case nAbs:
		return isLabel(n.kids[0])
	case nFunc:
		return len(n.kids) == 1 && symbolsOnly(n.kids) // \sin\theta
	case nTuple:
		if (n.open != '(' || n.close != ')') && n.open != ':' {
			return false
		}
		return symbolsOnly(n.kids)
	}
	return false
}

func symbolsOnly(kids []*node) bool {
	for _, k := range kids {
		if k.op != nVar || k.lit == wordVar {
			return false
		}
	}
	return len(kids) > 0
}

func isSymbolProduct(n *node) bool {
	return n.op == nVar || (n.op == nMul && symbolsOnly(n.kids))
}

// exactPart reads a chain with an approximation note, "\frac{\sqrt2}{2} \approx 0.707" or
// "2+3 = 5 \approx 5.0", as its exact part: the value just before the first ≈. A chain that
// starts with a label is left to stripAssign.
func exactPart(n *node) *node {
	if n.op != nRel || isLabel(n.kids[0]) {
		return n
	}
	first := -1
	for i, r := range n.rels {
		switch r {
		case "approx":
			if first < 0 {
				first = i
			}
		case "=":
		default:
			return n
		}
	}
	if first < 0 {
		return n
	}
	return n.kids[first]
}

// labelFamily is the label's symbol without its subscript: x_1 and x_2 name members of one
// family of solutions; anything that is not a plain symbol is its own family.
func labelFamily(n *node) (string, bool) {
	if n.op != nVar {
		return "", false
	}
	name, _, _ := strings.Cut(n.name, "_")
	return name, true
}

func sameLabel(a, b *node) bool {
	if fa, ok := labelFamily(a); ok {
		fb, ok := labelFamily(b)
		return ok && fa == fb
	}
	return sameTree(a, b)
}

// labelled returns the labels and values of a list whose members are all assignments to a
// label ("AB = 4, CD = 5").
func labelled(n *node) (labels, vals []*node, ok bool) {
	if n.op != nList || len(n.kids) < 2 {
		return nil, nil, false
	}
	for _, k := range n.kids {
		k = exactPart(k)
		v, assign := stripAssign(k)
		if !assign || (len(k.rels) == 1 && k.rels[0] == "in") {
			return nil, nil, false
		}
		labels = append(labels, k.kids[0])
		vals = append(vals, v)
	}
	return labels, vals, true
}

// regroup reads a labelled list by its labels. Members that all name one label (x = 1, x = 2,
// or x_1 = 1, x_2 = 2) stay a list of solutions. Distinct labels (AB = 4, CD = 5) make an ordered
// tuple of values; a repeated run of distinct labels (m = 2, n = 3; m = 4, n = 1) makes a list of
// such tuples, one per solution. It also returns the labels of one tuple, in order.
func regroup(n *node) (*node, []*node) {
	labels, vals, ok := labelled(n)
	if !ok {
		return n, nil
	}
	period := 0
	for k := 1; k <= len(labels); k++ {
		if !distinctLabels(labels[:k]) {
			break
		}
		period = k
	}
	if period < 2 || len(labels)%period != 0 {
		return n, nil
	}
	for i := period; i < len(labels); i++ {
		if !sameTree(labels[i], labels[i%period]) {
			return n, nil
		}
	}
	tuples := make([]*node, 0, len(labels)/period)
	for i := 0; i < len(vals); i += period {
		tuples = append(tuples, &node{op: nTuple, open: '(', close: ')', kids: vals[i : i+period]})
	}
	if len(tuples) == 1 {
		return tuples[0], labels[:period]
	}
	return &node{op: nList, kids: tuples}, labels[:period]
}

func distinctLabels(ls []*node) bool {
	for i := range ls {
		for j := 0; j < i; j++ {
			if sameLabel(ls[i], ls[j]) {
				return false
			}
		}
	}
	return true
}

// alignLabels reorders the values of b's tuple to a's label order when both sides name the
// same labels ("CD = 5, AB = 4" against "AB = 4, CD = 5").
func alignLabels(a *node, la []*node, b *node, lb []*node) *node {
	if len(la) == 0 || len(la) != len(lb) || a.op != nTuple || b.op != nTuple || len(b.kids) != len(lb) {
		return b
	}
	out := make([]*node, len(la))
	for i, l := range la {
		for j, m := range lb {
			if sameTree(l, m) {
				out[i] = b.kids[j]
			}
		}
		if out[i] == nil {
			return b
		}
	}
	return &node{op: nTuple, open: b.open, close: b.close, kids: out}
}
