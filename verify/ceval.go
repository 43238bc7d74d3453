package verify

import (
	"math"
	"math/cmplx"
	"strconv"
)

// Floating-point evaluation carries a first-order bound on its own rounding error, so that
// "equal up to rounding" (sin(pi) and 0) is told apart from "small but different" (pi*10^-20
// and 0) without a fixed absolute tolerance. Overflow and underflow give NaN: unknown.

const ulp = 0x1p-52 // twice the unit roundoff of float64, for slack

func nan() (complex128, float64) { return cmplx.NaN(), 0 }

func litFloat(lit string) (complex128, float64) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		if math.IsInf(f, 0) {
			return complex(f, 0), 0
		}
		return nan() // out of range or underflow to zero
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return complex(f, 0), 0
	}
	return complex(f, 0), math.Abs(f) * ulp
}

func gammaReal(x float64) float64 {
	if x > 171 {
		return math.Inf(1)
	}
	return math.Gamma(x)
}

// ceval evaluates n at the point e and returns the value with a bound on its rounding error.
func ceval(n *node, e *env) (complex128, float64) {
	v, err := ceval1(n, e)
	if e != nil && imag(v) != 0 && n != nil && n.op != nConst {
		e.nonReal = true
	}
	return v, err
}

func ceval1(n *node, e *env) (complex128, float64) {
	if n == nil {
		return nan()
	}
	switch n.op {
	case nNum:
		return litFloat(n.lit)
	case nConst:
		switch n.name {
		case "pi":
			return math.Pi, math.Pi * ulp
		case "e":
			return math.E, math.E * ulp
		case "i":
			return complex(0, 1), 0
		case "inf":
			return complex(math.Inf(1), 0), 0
		}
	case nVar:
		return e.lookup(n.name), 0
	case nNeg:
		v, err := ceval(n.kids[0], e)
		return -v, err
	case nAdd:
		var s complex128
		var err, mag float64
		for _, k := range n.kids {
			v, ek := ceval(k, e)
			s += v
			err += ek
			mag += cmplx.Abs(v)
		}
		return s, err + ulp*mag
	case nMul:
		p, err := complex(1, 0), 0.0
		for _, k := range n.kids {
			v, ek := ceval(k, e)
			q := p * v
			if q == 0 && p != 0 && v != 0 {
				return nan() // underflow
			}
			err = err*cmplx.Abs(v) + cmplx.Abs(p)*ek + err*ek + ulp*cmplx.Abs(q)
			p = q
		}
		return p, err
	case nDiv:
		a, ea := ceval(n.kids[0], e)
		b, eb := ceval(n.kids[1], e)
		ab := cmplx.Abs(b)
		if b == 0 || !finite(b) || ab <= eb {
			return nan()
		}
		q := a / b
		if q == 0 && a != 0 {
			return nan()
		}
		return q, (ea+cmplx.Abs(q)*eb)/ab + ulp*cmplx.Abs(q)
	case nPow:
		a, ea := ceval(n.kids[0], e)
		b, eb := ceval(n.kids[1], e)
		return powErr(a, ea, b, eb)
	case nRoot:
		x, ex := ceval(n.kids[0], e)
		if n.kids[1] == nil {
			var v complex128
			if imag(x) == 0 && real(x) >= 0 {
				v = complex(math.Sqrt(real(x)), 0)
			} else {
				v = cmplx.Sqrt(x)
			}
			if v == 0 {
				return v, math.Sqrt(ex)
			}
			return v, ex/(2*cmplx.Abs(v)) + ulp*cmplx.Abs(v)
		}
		q, eq := ceval(n.kids[1], e)
		if qi, ok := isRealInt(q, 1e6); ok && eq == 0 && qi%2 != 0 && imag(x) == 0 && real(x) < 0 {
			v := complex(-math.Pow(-real(x), 1/float64(qi)), 0)
			return v, cmplx.Abs(v)*ex/(float64(qi)*math.Abs(real(x))) + 2*ulp*cmplx.Abs(v)
		}
		if q == 0 {
			return nan()
		}
		return powErr(x, ex, 1/q, eq/(cmplx.Abs(q)*cmplx.Abs(q)))
	case nFact:
		x, ex := ceval(n.kids[0], e)
		if k, ok := isRealInt(x, 1e9); ok && ex < 0.5 {
			if k < 0 {
				return nan()
			}
			if k > 170 {
				return complex(math.Inf(1), 0), 0
			}
			p := 1.0
			for i := int64(2); i <= k; i++ {
				p *= float64(i)
			}
			return complex(p, 0), p * ulp * float64(k)
		}
		if imag(x) == 0 {
			v := gammaReal(real(x) + 1)
			return complex(v, 0), math.Abs(v) * (math.Log(math.Abs(real(x))+2)*ex + 4*ulp)
		}
		return nan()
	case nBinom:
		a, ea := ceval(n.kids[0], e)
		b, eb := ceval(n.kids[1], e)
		if imag(a) != 0 || imag(b) != 0 {
			return nan()
		}
		if k, ok := isRealInt(b, 1e9); ok && eb < 0.5 {
			if k < 0 {
				return 0, 0
			}
			if k > 10000 {
				return complex(math.Inf(1), 0), 0
			}
			p, rel := 1.0, 0.0
			for i := int64(0); i < k; i++ {
				t := real(a) - float64(i)
				if t != 0 {
					rel += ea / math.Abs(t)
				}
				p = p * t / float64(i+1)
			}
			return complex(p, 0), math.Abs(p) * (rel + 2*ulp*float64(k+1))
		}
		v := gammaReal(real(a)+1) / (gammaReal(real(b)+1) * gammaReal(real(a)-real(b)+1))
		return complex(v, 0), math.Abs(v) * (8*ulp + math.Log(math.Abs(real(a))+2)*(2*ea+2*eb))
	case nAbs:
		v, err := ceval(n.kids[0], e)
		return complex(cmplx.Abs(v), 0), err
	case nFunc:
		return cfunc(n, e)
	}
	return nan()
}

// powErr computes a^b and its error bound.
func powErr(a complex128, ea float64, b complex128, eb float64) (complex128, float64) {
	v := cpow(a, b)
	if !finite(v) {
		return v, 0
	}
	if v == 0 {
		if a != 0 {
			return nan() // underflow
		}
		return 0, ea
	}
	absA := cmplx.Abs(a)
	if absA == 0 {
		return v, 0
	}
	logA := cmplx.Abs(clog(a))
	absB := cmplx.Abs(b)
	err := cmplx.Abs(v) * (absB*ea/absA + logA*eb + 4*ulp*(1+absB*logA))
	return v, err
}

func cfunc(n *node, e *env) (complex128, float64) {
	x, ex := ceval(n.kids[0], e)
	var v, d complex128 // value and derivative
	switch n.name {
	case "sin":
		v, d = cmplx.Sin(x), cmplx.Cos(x)
	case "cos":
		v, d = cmplx.Cos(x), cmplx.Sin(x)
	case "tan":
		v = cmplx.Tan(x)
		d = 1 + v*v
	case "sec":
		v = 1 / cmplx.Cos(x)
		d = v * cmplx.Tan(x)
	case "csc":
		v = 1 / cmplx.Sin(x)
		d = v / cmplx.Tan(x)
	case "cot":
		v = 1 / cmplx.Tan(x)
		d = 1 + v*v
	case "arcsin", "arccos":
		if n.name == "arcsin" {
			v = cmplx.Asin(x)
		} else {
			v = cmplx.Acos(x)
		}
		d = 1 / cmplx.Sqrt(1-x*x)
	case "arctan", "arccot":
		if n.name == "arctan" {
			v = cmplx.Atan(x)
		} else {
			v = cmplx.Atan(1 / x)
		}
		d = 1 / (1 + x*x)
	case "arcsec", "arccsc":
		if n.name == "arcsec" {
			v = cmplx.Acos(1 / x)
		} else {
			v = cmplx.Asin(1 / x)
		}
		d = 1 / (x * x * cmplx.Sqrt(1-1/(x*x)))
	case "sinh":
		v, d = cmplx.Sinh(x), cmplx.Cosh(x)
	case "cosh":
		v, d = cmplx.Cosh(x), cmplx.Sinh(x)
	case "tanh":
		v = cmplx.Tanh(x)
		d = 1 - v*v
	case "coth":
		v = 1 / cmplx.Tanh(x)
		d = 1 - v*v
	case "sech":
		v = 1 / cmplx.Cosh(x)
		d = v * cmplx.Tanh(x)
	case "csch":
		v = 1 / cmplx.Sinh(x)
		d = v / cmplx.Tanh(x)
	case "ln", "lg":
		v, d = clog(x), 1/x
		if n.name == "lg" {
			v, d = v/math.Ln10, d/math.Ln10
		}
	case "log":
		if len(n.kids) == 2 {
			b, eb := ceval(n.kids[1], e)
			lb := clog(b)
			if lb == 0 || !finite(lb) {
				return nan()
			}
			v = clog(x) / lb
			err := ex/(cmplx.Abs(x)*cmplx.Abs(lb)) + cmplx.Abs(v)*eb/(cmplx.Abs(b)*cmplx.Abs(lb)) + 4*ulp*cmplx.Abs(v)
			return checked(v, err)
		}
		v, d = clog(x), 1/x
	case "exp":
		v = cmplx.Exp(x)
		d = v
	case "abs":
		return complex(cmplx.Abs(x), 0), ex
	case "floor", "ceil":
		if imag(x) != 0 {
			return nan()
		}
		r := real(x)
		if math.Abs(r-math.Round(r)) <= 8*ex && ex > 0 {
			return nan() // too close to an integer to know which side it is on
		}
		if n.name == "floor" {
			return complex(math.Floor(r), 0), 0
		}
		return complex(math.Ceil(r), 0), 0
	case "max", "min", "gcd", "lcm":
		return multiArg(n, x, ex, e)
	default:
		return nan()
	}
	err := 4 * ulp * cmplx.Abs(v)
	if ex > 0 {
		err += cmplx.Abs(d) * ex
	}
	return checked(v, err)
}

// checked turns an unbounded error into an unknown value.
func checked(v complex128, err float64) (complex128, float64) {
	if math.IsNaN(err) || math.IsInf(err, 0) {
		return nan()
	}
	return v, err
}

func multiArg(n *node, x complex128, ex float64, e *env) (complex128, float64) {
	if imag(x) != 0 {
		return nan()
	}
	acc, accErr := real(x), ex
	for _, k := range n.kids[1:] {
		v, ev := ceval(k, e)
		if imag(v) != 0 {
			return nan()
		}
		switch n.name {
		case "max":
			if real(v) > acc {
				acc, accErr = real(v), ev
			}
		case "min":
			if real(v) < acc {
				acc, accErr = real(v), ev
			}
		default:
			a, ok1 := isRealInt(complex(acc, 0), 1e15)
			b, ok2 := isRealInt(v, 1e15)
			if !ok1 || !ok2 || accErr >= 0.5 || ev >= 0.5 {
				return nan()
			}
			g := gcd64(a, b)
			if n.name == "gcd" {
				acc = float64(g)
			} else if g != 0 {
				acc = math.Abs(float64(a / g * b))
			}
			accErr = 0
		}
	}
	return complex(acc, 0), accErr
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

// nearE reports whether a and b agree within the relative tolerance plus their rounding-error
// bounds. A bound that is not small compared with the values means "cannot tell": not equal.
func nearE(a complex128, ea float64, b complex128, eb float64, rel float64) bool {
	bound := 8 * (ea + eb)
	scale := math.Max(cmplx.Abs(a), cmplx.Abs(b))
	if math.IsNaN(bound) || math.IsInf(bound, 0) || bound > 1e-6*math.Max(1, scale) {
		return false
	}
	return cmplx.Abs(a-b) <= rel*scale+bound
}

// near reports whether a and b agree within rel relative tolerance.
func near(a, b complex128, rel float64) bool {
	return cmplx.Abs(a-b) <= rel*math.Max(cmplx.Abs(a), cmplx.Abs(b))
}
