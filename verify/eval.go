package verify

import (
	"math"
	"math/big"
	"math/cmplx"
	"strconv"
	"strings"
)

const (
	maxRatBits   = 8192 // numerator+denominator bits allowed in exact arithmetic
	maxLitExp    = 400  // |decimal exponent| handled exactly
	maxFactExact = 500
	maxBinomN    = 4000
)

// litParts splits a number literal into its significant digits and decimal exponent:
// value = digits * 10^exp. sig counts significant digits; decimal tells whether the literal
// had a fraction part or an exponent.
func litParts(lit string) (digits string, exp int, sig int, decimal bool, ok bool) {
	mant := lit
	if k := strings.IndexAny(lit, "eE"); k >= 0 {
		e, err := strconv.Atoi(lit[k+1:])
		if err != nil || e > 1e6 || e < -1e6 {
			return "", 0, 0, false, false
		}
		exp = e
		mant = lit[:k]
		decimal = true
	}
	intPart, frac := mant, ""
	if k := strings.IndexByte(mant, '.'); k >= 0 {
		intPart, frac = mant[:k], mant[k+1:]
		decimal = true
	}
	exp -= len(frac)
	digits = strings.TrimLeft(intPart+frac, "0")
	sig = len(digits)
	if digits == "" {
		digits = "0"
	}
	return digits, exp, sig, decimal, true
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

func litRat(lit string) (*big.Rat, bool) {
	digits, exp, _, _, ok := litParts(lit)
	if !ok || exp > maxLitExp || exp < -maxLitExp {
		return nil, false
	}
	r := new(big.Rat)
	if len(digits) <= 18 {
		v, _ := strconv.ParseInt(digits, 10, 64)
		r.SetInt64(v)
	} else {
		n, ok := new(big.Int).SetString(digits, 10)
		if !ok {
			return nil, false
		}
		r.SetInt(n)
	}
	switch {
	case exp > 0:
		r.Mul(r, new(big.Rat).SetInt(pow10(exp)))
	case exp < 0:
		r.Quo(r, new(big.Rat).SetInt(pow10(-exp)))
	}
	return r, true
}

func ratOK(r *big.Rat) bool {
	return r.Num().BitLen()+r.Denom().BitLen() <= maxRatBits
}

func isInt(r *big.Rat) bool { return r.IsInt() }

// intRoot returns the exact q-th root of x >= 0 when there is one.
func intRoot(x *big.Int, q int) (*big.Int, bool) {
	if x.Sign() == 0 {
		return new(big.Int), true
	}
	if q == 2 {
		s := new(big.Int).Sqrt(x)
		return s, new(big.Int).Mul(s, s).Cmp(x) == 0
	}
	if x.BitLen() > 1000 || q > 64 {
		return nil, false
	}
	f, _ := new(big.Float).SetInt(x).Float64()
	guess := math.Round(math.Pow(f, 1/float64(q)))
	for d := -1.0; d <= 1; d++ {
		g := guess + d
		if g < 0 {
			continue
		}
		bg, _ := big.NewFloat(g).Int(nil)
		if new(big.Int).Exp(bg, big.NewInt(int64(q)), nil).Cmp(x) == 0 {
			return bg, true
		}
	}
	return nil, false
}

// ratRoot returns the exact q-th root of r when it is rational.
func ratRoot(r *big.Rat, q int) (*big.Rat, bool) {
	if q <= 0 {
		return nil, false
	}
	neg := r.Sign() < 0
	if neg && q%2 == 0 {
		return nil, false
	}
	num := new(big.Int).Abs(r.Num())
	n, ok := intRoot(num, q)
	if !ok {
		return nil, false
	}
	d, ok := intRoot(r.Denom(), q)
	if !ok {
		return nil, false
	}
	out := new(big.Rat).SetFrac(n, d)
	if neg {
		out.Neg(out)
	}
	return out, true
}

func ratPowInt(b *big.Rat, e int64) (*big.Rat, bool) {
	if e == 0 {
		return big.NewRat(1, 1), true
	}
	if b.Sign() == 0 {
		if e < 0 {
			return nil, false
		}
		return new(big.Rat), true
	}
	ae := e
	if ae < 0 {
		ae = -ae
	}
	bits := int64(b.Num().BitLen() + b.Denom().BitLen())
	if ae > 100000 || (bits > 2 && bits*ae > maxRatBits) {
		return nil, false
	}
	num := new(big.Int).Exp(b.Num(), big.NewInt(ae), nil)
	den := new(big.Int).Exp(b.Denom(), big.NewInt(ae), nil)
	if e < 0 {
		num, den = den, num
	}
	if den.BitLen()+num.BitLen() > maxRatBits+64 {
		return nil, false
	}
	return new(big.Rat).SetFrac(num, den), true
}

// ratOf evaluates n exactly when it is built from rational literals with exact operations.
func ratOf(n *node) (*big.Rat, bool) {
	if n == nil {
		return nil, false
	}
	switch n.op {
	case nNum:
		return litRat(n.lit)
	case nNeg:
		r, ok := ratOf(n.kids[0])
		if !ok {
			return nil, false
		}
		return new(big.Rat).Neg(r), true
	case nAdd, nMul:
		acc := new(big.Rat)
		if n.op == nMul {
			acc.SetInt64(1)
		}
		for _, k := range n.kids {
			r, ok := ratOf(k)
			if !ok {
				return nil, false
			}
			if n.op == nAdd {
				acc.Add(acc, r)
			} else {
				acc.Mul(acc, r)
			}
			if !ratOK(acc) {
				return nil, false
			}
		}
		return acc, true
	case nDiv:
		a, ok := ratOf(n.kids[0])
		if !ok {
			return nil, false
		}
		b, ok := ratOf(n.kids[1])
		if !ok || b.Sign() == 0 {
			return nil, false
		}
		out := new(big.Rat).Quo(a, b)
		return out, ratOK(out)
	case nPow:
		b, ok := ratOf(n.kids[0])
		if !ok {
			return nil, false
		}
		e, ok := ratOf(n.kids[1])
		if !ok {
			return nil, false
		}
		return ratPow(b, e)
	case nRoot:
		x, ok := ratOf(n.kids[0])
		if !ok {
			return nil, false
		}
		q := int64(2)
		if n.kids[1] != nil {
			qi, ok := ratOf(n.kids[1])
			if !ok || !qi.IsInt() || !qi.Num().IsInt64() {
				return nil, false
			}
			q = qi.Num().Int64()
			if q < 1 || q > 64 {
				return nil, false
			}
		}
		return ratRoot(x, int(q))
	case nFact:
		x, ok := ratOf(n.kids[0])
		if !ok || !x.IsInt() || x.Sign() < 0 || x.Num().Cmp(big.NewInt(maxFactExact)) > 0 {
			return nil, false
		}
		v := x.Num().Int64()
		if v < 2 {
			return big.NewRat(1, 1), true
		}
		return new(big.Rat).SetInt(new(big.Int).MulRange(1, v)), true
	case nBinom:
		a, ok1 := ratOf(n.kids[0])
		b, ok2 := ratOf(n.kids[1])
		if !ok1 || !ok2 || !a.IsInt() || !b.IsInt() || a.Sign() < 0 || a.Num().Cmp(big.NewInt(maxBinomN)) > 0 {
			return nil, false
		}
		nn, kk := a.Num().Int64(), b.Num()
		if kk.Sign() < 0 || kk.Cmp(a.Num()) > 0 {
			return new(big.Rat), true
		}
		return new(big.Rat).SetInt(new(big.Int).Binomial(nn, kk.Int64())), true
	case nAbs:
		r, ok := ratOf(n.kids[0])
		if !ok {
			return nil, false
		}
		return new(big.Rat).Abs(r), true
	case nFunc:
		switch n.name {
		case "floor", "ceil":
			r, ok := ratOf(n.kids[0])
			if !ok {
				return nil, false
			}
			q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for positive denominators
			if n.name == "ceil" && !r.IsInt() {
				q.Add(q, big.NewInt(1))
			}
			return new(big.Rat).SetInt(q), true
		case "max", "min":
			var best *big.Rat
			for _, k := range n.kids {
				r, ok := ratOf(k)
				if !ok {
					return nil, false
				}
				if best == nil || (n.name == "max" && r.Cmp(best) > 0) || (n.name == "min" && r.Cmp(best) < 0) {
					best = r
				}
			}
			return best, true
		}
	}
	return nil, false
}

func ratPow(b, e *big.Rat) (*big.Rat, bool) {
	if e.IsInt() {
		if !e.Num().IsInt64() {
			return nil, false
		}
		return ratPowInt(b, e.Num().Int64())
	}
	// Rational exponent p/q: exact only when b is a perfect q-th power.
	if !e.Denom().IsInt64() || !e.Num().IsInt64() {
		return nil, false
	}
	q := e.Denom().Int64()
	if q > 64 {
		return nil, false
	}
	root, ok := ratRoot(b, int(q))
	if !ok {
		return nil, false
	}
	return ratPowInt(root, e.Num().Int64())
}

// env holds the value of each free variable at one evaluation point.
type env struct {
	names []string
	vals  []complex128
}

func (e *env) lookup(name string) complex128 {
	if e != nil {
		for i, n := range e.names {
			if n == name {
				return e.vals[i]
			}
		}
	}
	return cmplx.NaN()
}

func finite(z complex128) bool {
	return !math.IsNaN(real(z)) && !math.IsNaN(imag(z)) && !math.IsInf(real(z), 0) && !math.IsInf(imag(z), 0)
}

func isRealInt(z complex128, limit float64) (int64, bool) {
	if imag(z) != 0 || math.IsNaN(real(z)) {
		return 0, false
	}
	r := math.Round(real(z))
	if math.Abs(real(z)-r) > 1e-9*math.Max(1, math.Abs(r)) || math.Abs(r) > limit {
		return 0, false
	}
	return int64(r), true
}

func cpowInt(a complex128, n int64) complex128 {
	neg := n < 0
	if neg {
		n = -n
	}
	res := complex(1, 0)
	for n > 0 {
		if n&1 == 1 {
			res *= a
		}
		a *= a
		n >>= 1
	}
	if neg {
		return 1 / res
	}
	return res
}

func cpow(a, b complex128) complex128 {
	if imag(b) == 0 {
		e := real(b)
		if e == math.Trunc(e) && math.Abs(e) <= 64 {
			if a == 0 && e < 0 {
				return cmplx.Inf()
			}
			return cpowInt(a, int64(e))
		}
		if imag(a) == 0 && real(a) < 0 {
			// Real odd roots of negative numbers: (-8)^(1/3) = -2.
			for q := 3.0; q <= 15; q += 2 {
				p := e * q
				if math.Abs(p-math.Round(p)) < 1e-12 {
					mag := math.Pow(-real(a), e)
					if int64(math.Round(p))%2 != 0 {
						mag = -mag
					}
					return complex(mag, 0)
				}
			}
		}
		if imag(a) == 0 && real(a) >= 0 {
			return complex(math.Pow(real(a), e), 0)
		}
	}
	if a == 0 {
		if real(b) > 0 {
			return 0
		}
		return cmplx.NaN()
	}
	return cmplx.Pow(a, b)
}

func litFloat(n *node) complex128 {
	f, err := strconv.ParseFloat(n.lit, 64)
	if err != nil {
		// Out of range literals parse as ±Inf with an error; keep them.
		if math.IsInf(f, 0) {
			return complex(f, 0)
		}
		return cmplx.NaN()
	}
	return complex(f, 0)
}

func gammaReal(x float64) float64 {
	if x > 171 {
		return math.Inf(1)
	}
	return math.Gamma(x)
}

// cval evaluates n numerically at the point e.
func cval(n *node, e *env) complex128 {
	if n == nil {
		return cmplx.NaN()
	}
	switch n.op {
	case nNum:
		return litFloat(n)
	case nConst:
		switch n.name {
		case "pi":
			return math.Pi
		case "e":
			return math.E
		case "i":
			return complex(0, 1)
		case "inf":
			return complex(math.Inf(1), 0)
		}
	case nVar:
		return e.lookup(n.name)
	case nNeg:
		return -cval(n.kids[0], e)
	case nAdd:
		var s complex128
		for _, k := range n.kids {
			s += cval(k, e)
		}
		return s
	case nMul:
		p := complex(1, 0)
		for _, k := range n.kids {
			p *= cval(k, e)
		}
		return p
	case nDiv:
		d := cval(n.kids[1], e)
		if d == 0 {
			return cmplx.Inf()
		}
		return cval(n.kids[0], e) / d
	case nPow:
		return cpow(cval(n.kids[0], e), cval(n.kids[1], e))
	case nRoot:
		x := cval(n.kids[0], e)
		if n.kids[1] == nil {
			if imag(x) == 0 && real(x) >= 0 {
				return complex(math.Sqrt(real(x)), 0)
			}
			return cmplx.Sqrt(x)
		}
		q := cval(n.kids[1], e)
		if qi, ok := isRealInt(q, 1e6); ok && qi%2 != 0 && imag(x) == 0 && real(x) < 0 {
			return complex(-math.Pow(-real(x), 1/float64(qi)), 0)
		}
		if q == 0 {
			return cmplx.NaN()
		}
		return cpow(x, 1/q)
	case nFact:
		x := cval(n.kids[0], e)
		if k, ok := isRealInt(x, 1e9); ok {
			if k < 0 {
				return cmplx.NaN()
			}
			if k > 170 {
				return complex(math.Inf(1), 0)
			}
			p := 1.0
			for i := int64(2); i <= k; i++ {
				p *= float64(i)
			}
			return complex(p, 0)
		}
		if imag(x) == 0 {
			return complex(gammaReal(real(x)+1), 0)
		}
		return cmplx.NaN()
	case nBinom:
		a, b := cval(n.kids[0], e), cval(n.kids[1], e)
		if imag(a) != 0 || imag(b) != 0 {
			return cmplx.NaN()
		}
		if k, ok := isRealInt(b, 1e9); ok {
			if k < 0 {
				return 0
			}
			if k > 10000 {
				return complex(math.Inf(1), 0)
			}
			p := 1.0
			for i := int64(0); i < k; i++ {
				p = p * (real(a) - float64(i)) / float64(i+1)
			}
			return complex(p, 0)
		}
		return complex(gammaReal(real(a)+1)/(gammaReal(real(b)+1)*gammaReal(real(a)-real(b)+1)), 0)
	case nAbs:
		return complex(cmplx.Abs(cval(n.kids[0], e)), 0)
	case nFunc:
		return cfunc(n, e)
	}
	return cmplx.NaN()
}

func cfunc(n *node, e *env) complex128 {
	x := cval(n.kids[0], e)
	real1 := func(f func(float64) float64) complex128 {
		if imag(x) != 0 {
			return cmplx.NaN()
		}
		return complex(f(real(x)), 0)
	}
	switch n.name {
	case "sin":
		return cmplx.Sin(x)
	case "cos":
		return cmplx.Cos(x)
	case "tan":
		return cmplx.Tan(x)
	case "sec":
		return 1 / cmplx.Cos(x)
	case "csc":
		return 1 / cmplx.Sin(x)
	case "cot":
		return 1 / cmplx.Tan(x)
	case "arcsin":
		return cmplx.Asin(x)
	case "arccos":
		return cmplx.Acos(x)
	case "arctan":
		return cmplx.Atan(x)
	case "arcsec":
		return cmplx.Acos(1 / x)
	case "arccsc":
		return cmplx.Asin(1 / x)
	case "arccot":
		return cmplx.Atan(1 / x)
	case "sinh":
		return cmplx.Sinh(x)
	case "cosh":
		return cmplx.Cosh(x)
	case "tanh":
		return cmplx.Tanh(x)
	case "coth":
		return 1 / cmplx.Tanh(x)
	case "sech":
		return 1 / cmplx.Cosh(x)
	case "csch":
		return 1 / cmplx.Sinh(x)
	case "ln":
		return clog(x)
	case "log":
		if len(n.kids) == 2 {
			b := clog(cval(n.kids[1], e))
			if b == 0 {
				return cmplx.NaN()
			}
			return clog(x) / b
		}
		return clog(x)
	case "lg":
		return clog(x) / math.Ln10
	case "exp":
		return cmplx.Exp(x)
	case "abs":
		return complex(cmplx.Abs(x), 0)
	case "floor":
		return real1(math.Floor)
	case "ceil":
		return real1(math.Ceil)
	case "max", "min", "gcd", "lcm":
		if imag(x) != 0 {
			return cmplx.NaN()
		}
		acc := real(x)
		for _, k := range n.kids[1:] {
			v := cval(k, e)
			if imag(v) != 0 {
				return cmplx.NaN()
			}
			switch n.name {
			case "max":
				acc = math.Max(acc, real(v))
			case "min":
				acc = math.Min(acc, real(v))
			default:
				a, ok1 := isRealInt(complex(acc, 0), 1e15)
				b, ok2 := isRealInt(v, 1e15)
				if !ok1 || !ok2 {
					return cmplx.NaN()
				}
				g := gcd64(a, b)
				if n.name == "gcd" {
					acc = float64(g)
				} else if g != 0 {
					acc = math.Abs(float64(a / g * b))
				}
			}
		}
		return complex(acc, 0)
	}
	return cmplx.NaN()
}

func gcd64(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func clog(x complex128) complex128 {
	if x == 0 {
		return complex(math.Inf(-1), 0)
	}
	if imag(x) == 0 && real(x) > 0 {
		return complex(math.Log(real(x)), 0)
	}
	return cmplx.Log(x)
}

// near reports whether a and b agree within rel relative plus abs absolute tolerance.
func near(a, b complex128, rel, abs float64) bool {
	d := cmplx.Abs(a - b)
	scale := math.Max(cmplx.Abs(a), cmplx.Abs(b))
	return d <= rel*scale+abs
}
