package verify

import (
	"math"
	"math/big"
	"math/cmplx"
	"strconv"
	"strings"
)

const (
	maxRatBits   = 1 << 15 // numerator+denominator bits allowed in exact arithmetic
	maxLitExp    = 400     // |decimal exponent| handled exactly
	maxFactExact = 3000
	maxBinomN    = 20000
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
	// Size of the result in bits, roughly: (bits(num)-1 + bits(den)-1) * |e|; 0 for ±1.
	bits := int64(new(big.Int).Abs(b.Num()).BitLen() - 1 + b.Denom().BitLen() - 1)
	if ae > 100000 || bits*ae > maxRatBits {
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
	// nonReal is set when evaluation passed through a non-real value (the square root or
	// logarithm of a negative number): the point lies outside the real domain.
	nonReal bool
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
