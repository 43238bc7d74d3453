package verify

import "math/bits"

// small is a rational num/den with den > 0, used by the fast path for plain numbers.
type small struct {
	num     int64
	den     int64
	decimal bool // written with a decimal point or an exponent
}

const maxSmall = 1 << 62

// smallLit parses an integer or decimal literal without an exponent.
func smallLit(lit string) (small, bool) {
	var num, den int64 = 0, 1
	seenDot := false
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		switch {
		case c == '.':
			if seenDot {
				return small{}, false
			}
			seenDot = true
		case isDigit(c):
			if num > (maxSmall-9)/10 || (seenDot && den > maxSmall/10) {
				return small{}, false
			}
			num = num*10 + int64(c-'0')
			if seenDot {
				den *= 10
			}
		default:
			return small{}, false
		}
	}
	return small{num: num, den: den, decimal: seenDot}, true
}

// fastNumber reads answers shaped like 12, -3.5, 3/4, -\frac{1}{2} or \frac12.
func fastNumber(toks []token) (small, bool) {
	neg := false
	if len(toks) > 0 && toks[0].kind == tOp && (toks[0].text == "-" || toks[0].text == "+") {
		neg = toks[0].text == "-"
		toks = toks[1:]
	}
	var v small
	switch {
	case len(toks) == 1 && toks[0].kind == tNum:
		a, ok := smallLit(toks[0].text)
		if !ok {
			return small{}, false
		}
		v = a
	case len(toks) == 3 && toks[0].kind == tNum && isOpTok(toks[1], "/") && toks[2].kind == tNum:
		a, ok1 := smallLit(toks[0].text)
		b, ok2 := smallLit(toks[2].text)
		if !ok1 || !ok2 || a.decimal || b.decimal {
			return small{}, false
		}
		v = small{num: a.num, den: b.num}
	case len(toks) == 2 && toks[0].kind == tCmd && toks[0].text == "frac" && toks[1].kind == tNum &&
		len(toks[1].text) == 2 && isIntLit(toks[1].text):
		v = small{num: int64(toks[1].text[0] - '0'), den: int64(toks[1].text[1] - '0')}
	case len(toks) == 7 && toks[0].kind == tCmd && toks[0].text == "frac" &&
		isOpTok(toks[1], "{") && toks[2].kind == tNum && isOpTok(toks[3], "}") &&
		isOpTok(toks[4], "{") && toks[5].kind == tNum && isOpTok(toks[6], "}"):
		a, ok1 := smallLit(toks[2].text)
		b, ok2 := smallLit(toks[5].text)
		if !ok1 || !ok2 || a.decimal || b.decimal {
			return small{}, false
		}
		v = small{num: a.num, den: b.num}
	default:
		return small{}, false
	}
	if v.den == 0 {
		return small{}, false
	}
	if neg {
		v.num = -v.num
	}
	return v, true
}

// smallEqual compares two small rationals exactly (cross multiplication in 128 bits).
func smallEqual(a, b small) bool {
	if (a.num < 0) != (b.num < 0) {
		return a.num == 0 && b.num == 0
	}
	an, bn := uabs(a.num), uabs(b.num)
	h1, l1 := bits.Mul64(an, uint64(b.den))
	h2, l2 := bits.Mul64(bn, uint64(a.den))
	return h1 == h2 && l1 == l2
}

func uabs(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}
