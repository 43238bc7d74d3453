package verify

// Bounds on evaluating matrix arithmetic: element products built, and matrix products (each
// one multiplies the size of the element expressions).
const (
	maxMatrixWork = 512
	maxMatrixMuls = 3
)

type matrixEval struct {
	work, muls int
}

// matrixValue evaluates sums, differences, scalar multiples and products of explicit matrices
// into one matrix of element expressions. ok is false when n is not such an expression, the
// dimensions do not fit or the work would be too large.
func matrixValue(n *node) (*node, bool) {
	var me matrixEval
	return me.value(n)
}

func (me *matrixEval) value(n *node) (*node, bool) {
	switch n.op {
	case nMatrix:
		return n, true
	case nNeg:
		m, ok := me.value(n.kids[0])
		if !ok {
			return nil, false
		}
		return mapElems(m, func(e *node) *node { return &node{op: nNeg, kids: []*node{e}} }), true
	case nAdd:
		return me.sum(n.kids)
	case nMul:
		return me.product(n.kids)
	}
	return nil, false
}

func hasMatrix(n *node) bool {
	switch n.op {
	case nMatrix:
		return true
	case nNeg, nAdd, nMul:
		for _, k := range n.kids {
			if hasMatrix(k) {
				return true
			}
		}
	}
	return false
}

func mapElems(m *node, f func(*node) *node) *node {
	out := &node{op: nMatrix, rows: m.rows, cols: m.cols, kids: make([]*node, len(m.kids))}
	for i, e := range m.kids {
		out.kids[i] = f(e)
	}
	return out
}

func (me *matrixEval) sum(terms []*node) (*node, bool) {
	var acc *node
	for _, t := range terms {
		m, ok := me.value(t)
		if !ok {
			return nil, false
		}
		if acc == nil {
			acc = m
			continue
		}
		if m.rows != acc.rows || m.cols != acc.cols {
			return nil, false
		}
		sum := &node{op: nMatrix, rows: m.rows, cols: m.cols, kids: make([]*node, len(m.kids))}
		for i := range m.kids {
			sum.kids[i] = &node{op: nAdd, kids: []*node{acc.kids[i], m.kids[i]}}
		}
		acc = sum
	}
	return acc, acc != nil
}

// product multiplies factors left to right; scalar factors scale the result.
func (me *matrixEval) product(factors []*node) (*node, bool) {
	var acc *node
	var scalars []*node
	for _, f := range factors {
		if !hasMatrix(f) {
			if !isScalar(f) {
				return nil, false
			}
			scalars = append(scalars, f)
			continue
		}
		m, ok := me.value(f)
		if !ok {
			return nil, false
		}
		if acc == nil {
			acc = m
			continue
		}
		me.work += acc.rows * m.cols * acc.cols
		me.muls++
		if acc.cols != m.rows || me.work > maxMatrixWork || me.muls > maxMatrixMuls {
			return nil, false
		}
		acc = matMul(acc, m)
	}
	if acc == nil {
		return nil, false
	}
	for _, s := range scalars {
		acc = mapElems(acc, func(e *node) *node { return &node{op: nMul, kids: []*node{s, e}} })
	}
	return acc, true
}

func matMul(a, b *node) *node {
	out := &node{op: nMatrix, rows: a.rows, cols: b.cols, kids: make([]*node, a.rows*b.cols)}
	for i := 0; i < a.rows; i++ {
		for j := 0; j < b.cols; j++ {
			sum := &node{op: nAdd}
			for k := 0; k < a.cols; k++ {
				sum.kids = append(sum.kids, &node{op: nMul, kids: []*node{a.kids[i*a.cols+k], b.kids[k*b.cols+j]}})
			}
			out.kids[i*b.cols+j] = sum
		}
	}
	return out
}
