package sim

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

var (
	reInt      = regexp.MustCompile(`^-?\d+$`)
	reDec      = regexp.MustCompile(`^-?\d+\.\d+$`)
	reSlash    = regexp.MustCompile(`^(-?)(\d+)/(\d+)$`)
	reFrac     = regexp.MustCompile(`^(-?)\\(d?)frac\{(\d+)\}\{(\d+)\}$`)
	reSet      = regexp.MustCompile(`^\\\{([^{}()\[\]\\$]*)\\\}$`)
	reInterval = regexp.MustCompile(`^([(\[])\s*([^,()\[\]{}$]+?)\s*,\s*([^,()\[\]{}$]+?)\s*([)\]])$`)
	reChoice   = regexp.MustCompile(`^(\(?)([A-Ea-e])(\)?)$`)
	reWord     = regexp.MustCompile(`^[A-Za-z][A-Za-z ]*$`)
	reLastNum  = regexp.MustCompile(`\d+`)
	reUnitNum  = regexp.MustCompile(`^(-?\d+(?:\.\d+)?)(\^\\circ|\^\{\\circ\}|\\%|%)$`)
)

// correctForms lists renderings of gold that are mathematically equal to it.
// Only transformations known safe for the exact form are used; the first
// element is always gold itself.
func correctForms(gold string) []string {
	forms := []string{gold}
	add := func(s ...string) { forms = append(forms, s...) }
	switch {
	case reInt.MatchString(gold):
		add(gold+".0", "x = "+gold, "$"+gold+"$")
	case reDec.MatchString(gold):
		add(gold+"0", "$"+gold+"$")
	case reSlash.MatchString(gold):
		m := reSlash.FindStringSubmatch(gold)
		if m[3] != "0" && strings.TrimLeft(m[3], "0") != "" {
			add(m[1]+`\frac{`+m[2]+"}{"+m[3]+"}", m[1]+`\dfrac{`+m[2]+"}{"+m[3]+"}")
			if d, ok := terminatingDecimal(m[1], m[2], m[3]); ok {
				add(d)
			}
		}
	case reFrac.MatchString(gold):
		m := reFrac.FindStringSubmatch(gold)
		if strings.TrimLeft(m[4], "0") != "" {
			other := "d"
			if m[2] == "d" {
				other = ""
			}
			add(m[1]+m[3]+"/"+m[4], m[1]+`\`+other+"frac{"+m[3]+"}{"+m[4]+"}")
			if d, ok := terminatingDecimal(m[1], m[3], m[4]); ok {
				add(d)
			}
		}
	case reSet.MatchString(gold):
		elems := splitElems(reSet.FindStringSubmatch(gold)[1])
		if len(elems) >= 2 {
			rev := make([]string, len(elems))
			for i, e := range elems {
				rev[len(elems)-1-i] = e
			}
			add(`\{`+strings.Join(rev, ", ")+`\}`, `\{`+strings.Join(elems, ", ")+`\}`, `\{`+strings.Join(elems, ",")+`\}`)
		}
	case reInterval.MatchString(gold):
		m := reInterval.FindStringSubmatch(gold)
		add(m[1]+m[2]+", "+m[3]+m[4], m[1]+m[2]+","+m[3]+m[4])
	case reChoice.MatchString(gold), reWord.MatchString(gold):
	default:
		if !strings.Contains(gold, "$") {
			add("$" + gold + "$")
		}
	}
	return dedupe(forms)
}

func splitElems(s string) []string {
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil
		}
		out = append(out, p)
	}
	return out
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// terminatingDecimal renders sign num/den exactly as a decimal when it has
// at most 6 decimal places.
func terminatingDecimal(sign, num, den string) (string, bool) {
	r, ok := new(big.Rat).SetString(num + "/" + den)
	if !ok {
		return "", false
	}
	if sign == "-" {
		r.Neg(r)
	}
	d := new(big.Int).Set(r.Denom())
	for _, p := range []int64{2, 5} {
		bp := big.NewInt(p)
		for new(big.Int).Mod(d, bp).Sign() == 0 {
			d.Quo(d, bp)
		}
	}
	if d.Cmp(big.NewInt(1)) != 0 {
		return "", false
	}
	s := r.FloatString(6)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s, true
}

var wrongWords = []string{"blue", "Tuesday", "impossible", "none", "seven", "north"}

// wrongForm renders an answer clearly different from gold.
func wrongForm(gold string, r *rng) string {
	cand := wrongCandidate(gold, r)
	if isCorrectFor(cand, gold) {
		cand = gold + " + 1"
	}
	return cand
}

func wrongCandidate(gold string, r *rng) string {
	switch {
	case reInt.MatchString(gold):
		n, ok := new(big.Int).SetString(gold, 10)
		if !ok {
			return gold + "1"
		}
		ops := []func(*big.Int) *big.Int{
			func(x *big.Int) *big.Int { return x.Add(x, big.NewInt(1)) },
			func(x *big.Int) *big.Int { return x.Sub(x, big.NewInt(1)) },
			func(x *big.Int) *big.Int { return x.Mul(x, big.NewInt(2)) },
			func(x *big.Int) *big.Int { return x.Neg(x) },
			func(x *big.Int) *big.Int { return x.Add(x, big.NewInt(10)) },
		}
		for range 4 {
			w := pick(r, ops)(new(big.Int).Set(n))
			if w.Cmp(n) != 0 {
				return w.String()
			}
		}
		return new(big.Int).Add(n, big.NewInt(1)).String()
	case reDec.MatchString(gold):
		f, err := strconv.ParseFloat(gold, 64)
		if err != nil {
			return gold + " + 1"
		}
		if f != 0 && r.chance(0.5) {
			return strconv.FormatFloat(f*2, 'f', -1, 64)
		}
		return strconv.FormatFloat(f+1, 'f', -1, 64)
	case reSlash.MatchString(gold):
		m := reSlash.FindStringSubmatch(gold)
		num, den := bumpFraction(m[1], m[2], m[3], r)
		return num + "/" + den
	case reFrac.MatchString(gold):
		m := reFrac.FindStringSubmatch(gold)
		num, den := bumpFraction(m[1], m[3], m[4], r)
		neg := ""
		if strings.HasPrefix(num, "-") {
			neg, num = "-", num[1:]
		}
		return neg + `\` + m[2] + "frac{" + num + "}{" + den + "}"
	case reSet.MatchString(gold):
		elems := splitElems(reSet.FindStringSubmatch(gold)[1])
		if len(elems) >= 2 && r.chance(0.5) {
			return `\{` + strings.Join(elems[:len(elems)-1], ", ") + `\}`
		}
		present := map[string]bool{}
		for _, e := range elems {
			present[e] = true
		}
		for i := 0; ; i++ {
			if s := strconv.Itoa(i); !present[s] {
				return `\{` + strings.Join(append(elems, s), ", ") + `\}`
			}
		}
	case reInterval.MatchString(gold):
		m := reInterval.FindStringSubmatch(gold)
		flip := map[string]string{"(": "[", "[": "(", ")": "]", "]": ")"}
		switch {
		case m[1] == "(" && m[4] == ")":
			// An open interval or a point: change a coordinate.
			if w, ok := bumpLastNumber(gold, r); ok {
				return w
			}
		case !strings.Contains(m[2], "infty"):
			return flip[m[1]] + m[2] + ", " + m[3] + m[4]
		case !strings.Contains(m[3], "infty"):
			return m[1] + m[2] + ", " + m[3] + flip[m[4]]
		}
		return `(-\infty, 0]`
	case reUnitNum.MatchString(gold):
		m := reUnitNum.FindStringSubmatch(gold)
		f, _ := strconv.ParseFloat(m[1], 64)
		return strconv.FormatFloat(f+float64(1+r.intn(9)), 'f', -1, 64) + m[2]
	case reChoice.MatchString(gold):
		m := reChoice.FindStringSubmatch(gold)
		c := m[2][0]
		base := byte('A')
		if c >= 'a' {
			base = 'a'
		}
		next := base + (c-base+1+byte(r.intn(4)))%5
		return m[1] + string(next) + m[3]
	case reWord.MatchString(gold):
		switch strings.ToLower(gold) {
		case "yes":
			return "No"
		case "no":
			return "Yes"
		case "true":
			return "False"
		case "false":
			return "True"
		}
		for {
			if w := pick(r, wrongWords); !strings.EqualFold(w, gold) {
				return w
			}
		}
	}
	if w, ok := bumpLastNumber(gold, r); ok {
		return w
	}
	return gold + " + 1"
}

// bumpLastNumber adds 1 or 2 to the last run of digits in s.
func bumpLastNumber(s string, r *rng) (string, bool) {
	loc := lastIndexOf(reLastNum, s)
	if loc == nil {
		return "", false
	}
	n, ok := new(big.Int).SetString(s[loc[0]:loc[1]], 10)
	if !ok {
		return "", false
	}
	n.Add(n, big.NewInt(int64(1+r.intn(2))))
	return s[:loc[0]] + n.String() + s[loc[1]:], true
}

func lastIndexOf(re *regexp.Regexp, s string) []int {
	all := re.FindAllStringIndex(s, -1)
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}

// bumpFraction changes a fraction's numerator or denominator so that its
// value changes.
func bumpFraction(sign, num, den string, r *rng) (string, string) {
	n, okN := new(big.Int).SetString(num, 10)
	d, okD := new(big.Int).SetString(den, 10)
	if !okN || !okD {
		return sign + num + "1", den
	}
	if n.Sign() != 0 && r.chance(0.5) {
		return sign + num, d.Add(d, big.NewInt(1)).String()
	}
	return sign + n.Add(n, big.NewInt(1)).String(), den
}

var notationNoise = strings.NewReplacer("$", "", " ", "", "\t", "", "\n", "", `\left`, "", `\right`, "",
	`\dfrac`, `\frac`, `\tfrac`, `\frac`, `\!`, "", `\,`, "")

// normalizeAnswer reduces notation noise for comparing rendered answers:
// dollars, spaces, \boxed{}, \left/\right, \dfrac, a leading "x =" and a
// trailing period.
func normalizeAnswer(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, `\boxed{`) && strings.HasSuffix(s, "}") {
		s = s[len(`\boxed{`) : len(s)-1]
	}
	s = notationNoise.Replace(s)
	s = strings.TrimSuffix(s, ".")
	if len(s) > 2 && s[1] == '=' && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = s[2:]
	}
	return s
}

// sameAnswer is true when a and b normalize equal or are equal numbers.
func sameAnswer(a, b string) bool {
	na, nb := normalizeAnswer(a), normalizeAnswer(b)
	if na == nb {
		return true
	}
	ra, okA := parseRational(na)
	rb, okB := parseRational(nb)
	return okA && okB && ra.Cmp(rb) == 0
}

// parseRational reads an integer, decimal, a/b or \frac{a}{b}.
func parseRational(s string) (*big.Rat, bool) {
	if m := reFrac.FindStringSubmatch(s); m != nil {
		s = m[1] + m[3] + "/" + m[4]
	}
	if !reInt.MatchString(s) && !reDec.MatchString(s) && !reSlash.MatchString(s) {
		return nil, false
	}
	if m := reSlash.FindStringSubmatch(s); m != nil && strings.TrimLeft(m[3], "0") == "" {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// isCorrectFor tells whether a graded final answer matches gold in any of
// the notations correctForms produces (or normalizes to the same value).
func isCorrectFor(final, gold string) bool {
	if strings.TrimSpace(final) == "" {
		return false
	}
	for _, f := range correctForms(gold) {
		if sameAnswer(final, f) {
			return true
		}
	}
	return false
}
