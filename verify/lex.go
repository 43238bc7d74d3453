package verify

import (
	"strings"
	"unicode/utf8"
)

// Limits that bound the work done on one answer.
const (
	maxAnswerLen = 4096 // longer answers are compared as strings only
	maxTokens    = 1024
	maxLexDepth  = 24 // nesting of \text{...} and friends
)

type tokKind uint8

const (
	tNum   tokKind = iota + 1 // number literal: digits, optional fraction and exponent
	tIdent                    // single-letter variable or Greek letter name
	tWord                     // a word of text (units, "and", "or", names)
	tCmd                      // LaTeX command or known function name, without backslash
	tOp                       // punctuation and operators
)

type token struct {
	kind     tokKind
	text     string
	fromText bool // produced inside \text{...}, \mbox{...} and the like
	space    bool // whitespace came before it
	newline  bool // a line break came before it
	glued    bool // the digits left after a one-digit macro argument (\frac123 is \frac{1}{2}3)
}

// lexed is one answer after decoration was dropped.
type lexed struct {
	toks    []token
	percent bool
	degree  bool
	bad     bool // too long or too deeply nested to analyse
	// commaAmbig is set when a number such as 3,75 could be a decimal comma or a list of two
	// numbers; the tokens hold the list reading unless the lexer was asked for decimals.
	commaAmbig bool
}

type lexMode uint8

const (
	modeMath lexMode = iota
	modeText         // inside \text{}, \mbox{}: letters are words or unit letters
	modeFont         // inside \mathrm{}, \mathbf{}: letters are symbols, runs are words
)

type lexer struct {
	lexed
	space    bool
	newline  bool
	depth    int
	paren    int  // bracket depth, to keep "(100,200)" a pair
	decComma bool // read an ambiguous 3,75 as a decimal comma
}

func lex(s string, decComma bool) lexed {
	lx := lexer{decComma: decComma}
	lx.toks = make([]token, 0, min(len(s), 16)) // a token takes a byte or more
	lx.run(s, modeMath)
	return lx.lexed
}

func (lx *lexer) emit(k tokKind, text string, fromText bool) {
	if len(lx.toks) >= maxTokens {
		lx.bad = true
		return
	}
	lx.toks = append(lx.toks, token{kind: k, text: text, fromText: fromText, space: lx.space, newline: lx.newline})
	lx.space, lx.newline = false, false
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func (lx *lexer) run(s string, mode lexMode) {
	lx.depth++
	if lx.depth > maxLexDepth {
		lx.bad = true
		lx.depth--
		return
	}
	i := 0
	for i < len(s) && !lx.bad {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '~':
			lx.space = true
			if c == '\n' || c == '\r' {
				lx.newline = true
			}
			i++
		case c == '$':
			i++
		case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
			i = lx.number(s, i)
		case isLetter(c):
			i = lx.letters(s, i, mode)
		case c == '\\':
			i = lx.command(s, i, mode)
		case c >= 0x80:
			i = lx.unicode(s, i, mode)
		default:
			i = lx.punct(s, i)
		}
	}
	lx.depth--
}

// sepLen returns the length of a thousands separator at s[i:], or 0.
func sepLen(s string, i int, allowComma bool) int {
	r := s[i:]
	switch {
	case strings.HasPrefix(r, "{,}"):
		return 3 + countSpaces(r[3:])
	case strings.HasPrefix(r, ",\\!"), strings.HasPrefix(r, ",\\,"):
		return 3 + countSpaces(r[3:])
	case allowComma && strings.HasPrefix(r, ","):
		return 1
	case strings.HasPrefix(r, "\\,"), strings.HasPrefix(r, "\\!"), strings.HasPrefix(r, "\\ "), strings.HasPrefix(r, "\\;"):
		return 2
	case strings.HasPrefix(r, " "), strings.HasPrefix(r, "~"):
		return 1
	}
	return 0
}

func countSpaces(s string) int {
	n := 0
	for n < len(s) && s[n] == ' ' {
		n++
	}
	return n
}

func threeDigitsAt(s string, i int) bool {
	return i+3 <= len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) &&
		(i+3 == len(s) || !isDigit(s[i+3]))
}

func (lx *lexer) number(s string, i int) int {
	start := i
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if end, lit, ok := dottedThousands(s, start, j, lx.paren == 0); ok {
		lx.emit(tNum, lit, false)
		return end
	}
	if end, lit, ok := indianGroups(s, start, j); ok && lx.paren == 0 {
		lx.emit(tNum, lit, false)
		return end
	}
	var grouped []byte
	commaGroups := false
	if n := j - start; n >= 1 && n <= 3 && s[start] != '0' {
		k := j
		for k < len(s) {
			sl := sepLen(s, k, lx.paren == 0)
			if sl == 0 || !threeDigitsAt(s, k+sl) {
				break
			}
			if grouped == nil {
				grouped = append(make([]byte, 0, 16), s[start:j]...)
			}
			commaGroups = commaGroups || s[k] == ','
			grouped = append(grouped, s[k+sl:k+sl+3]...)
			k += sl + 3
		}
		if grouped != nil {
			j = k
		}
	}
	if lx.paren == 0 {
		// "1 234,5": groups of three by spaces, then a decimal comma.
		if grouped != nil && !commaGroups {
			if end, ok := commaFraction(s, j); ok {
				lx.emit(tNum, string(grouped)+"."+s[j+1:end], false)
				return end
			}
		}
		if grouped == nil && !afterListComma(s, start) {
			if end, ok := commaFraction(s, j); ok {
				lx.commaAmbig = true
				if lx.decComma {
					lx.emit(tNum, s[start:j]+"."+s[j+1:end], false)
					return end
				}
			}
		}
	}
	fracStart := j
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	// Scientific notation: 1e-3, 2.5E10, not followed by a letter.
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			if k == len(s) || !isLetter(s[k]) {
				j = k
			}
		}
	}
	lit := s[start:j]
	if grouped != nil {
		lit = string(grouped) + s[fracStart:j]
	}
	lx.emit(tNum, lit, false)
	return j
}

func isFuncName(s string) bool {
	switch s {
	case "sin", "cos", "tan", "sec", "csc", "cot", "arcsin", "arccos",
		"arctan", "arcsec", "arccsc", "arccot", "asin", "acos", "atan", "sinh",
		"cosh", "tanh", "coth", "sech", "csch", "ln", "log", "lg",
		"exp", "abs", "floor", "ceil", "max", "min", "gcd", "lcm":
		return true
	}
	return false
}

func isShortWord(s string) bool {
	switch s {
	case "cm", "mm", "km", "kg", "mg", "ft", "yd", "mi",
		"hr", "ml", "mL", "oz", "lb", "sq", "or", "no",
		"is", "to", "of", "am", "pm", "th", "st", "nd",
		"rd":
		return true
	}
	return false
}

func isPercentWord(w string) bool {
	switch strings.ToLower(w) {
	case "percent", "pct", "perc", "percentage", "percents", "ciento", "pourcent", "prozent", "percento", "procent",
		"процент", "процента", "процентов", "відсотків", "प्रतिशत", "パーセント", "퍼센트", "prosen", "yüzde":
		return true
	}
	return false
}

func isDegreeWord(w string) bool {
	switch strings.ToLower(w) {
	case "degrees", "degree", "deg", "grados", "degrés", "度":
		return true
	}
	return false
}

func (lx *lexer) letters(s string, i int, mode lexMode) int {
	j := i
	for j < len(s) && isLetter(s[j]) {
		j++
	}
	if j < len(s) && s[j] >= utf8.RuneSelf {
		if r, _ := utf8.DecodeRuneInString(s[j:]); isWordRune(r) {
			return lx.word(s, i, mode)
		}
	}
	w := s[i:j]
	if len(w) >= 2 {
		if len(w) >= 4 && isApproxWord(w) {
			lx.emit(tCmd, "approx", false)
			return j
		}
		if isPercentWord(w) {
			lx.percent = true
			return j
		}
		if isDegreeWord(w) {
			lx.degree = true
			return j
		}
	}
	if n := perCent(s, j); n > 0 && (strings.EqualFold(w, "per") || strings.EqualFold(w, "pour") || strings.EqualFold(w, "por")) {
		lx.percent = true
		return j + n
	}
	if w == "R" && j < len(s) && s[j] == '$' {
		return j + 1 // R$ 50,00: Brazilian reais
	}
	if isCurrencyWord(w) {
		if j < len(s) && s[j] == '.' {
			j++
		}
		return j
	}
	switch mode {
	case modeText:
		if len(w) == 1 {
			lx.emit(tIdent, w, true)
		} else {
			lx.emit(tWord, w, true)
		}
		return j
	case modeFont:
		switch {
		case len(w) == 1:
			lx.emit(tIdent, w, false)
		case isFuncName(w):
			lx.emit(tCmd, w, false)
		default:
			lx.emit(tWord, w, false)
		}
		return j
	}
	if len(w) == 1 {
		lx.emit(tIdent, w, false)
		return j
	}
	switch w {
	case "pi", "Pi", "PI":
		lx.emit(tCmd, "pi", false)
		return j
	case "log":
		// log2(8), log10(x): the base written right after the name, as in code
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k > j && k < len(s) && s[k] == '(' {
			lx.emit(tCmd, "log", false)
			lx.emit(tOp, "_", false)
			lx.emit(tNum, s[j:k], false)
			return k
		}
	case "infty", "inf", "infinity", "Infinity", "oo":
		lx.emit(tCmd, "infty", false)
		return j
	case "sqrt":
		lx.emit(tCmd, "sqrt", false)
		return j
	case "in":
		lx.emit(tCmd, "in", false)
		return j
	case "and", "or", "And", "Or", "AND", "OR":
		lx.emit(tWord, strings.ToLower(w), false)
		return j
	}
	if isFuncName(w) {
		lx.emit(tCmd, w, false)
		return j
	}
	switch {
	case w == "cbrt":
		lx.emit(tCmd, "cbrt", false)
		return j
	case len(w) >= 3 && w[0] >= 'a' && isGreek(w):
		lx.emit(tIdent, w, false) // theta written in plain text is \theta
		return j
	case letterProduct(s, i, j):
		for k := i; k < j; k++ {
			lx.emit(tIdent, s[k:k+1], false)
		}
		return j
	}
	if len(w) == 2 && isShortWord(strings.ToLower(w)) && lx.afterSymbol() {
		switch strings.ToLower(w) {
		case "or", "no", "is", "to", "of", "th", "st", "nd", "rd":
		default:
			// "2\pi hr", "F = am": after a symbol or an operator, two letters are a product,
			// not the unit of a number ("5 hr", "9 am")
			lx.emit(tIdent, s[i:i+1], false)
			lx.emit(tIdent, s[i+1:j], false)
			return j
		}
	}
	if len(w) >= 3 || isShortWord(strings.ToLower(w)) {
		lx.emit(tWord, w, false)
		return j
	}
	// Two letters such as "xy" or "ab": a product of symbols.
	for k := i; k < j; k++ {
		lx.emit(tIdent, s[k:k+1], false)
	}
	return j
}

// braced returns the content of a {...} group starting at s[i] (after spaces) and the index
// after it. Without a brace it returns the next single character (LaTeX argument rules).
func braced(s string, i int) (string, int, bool) {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i >= len(s) {
		return "", i, false
	}
	if s[i] != '{' {
		if s[i] == '\\' {
			j := i + 1
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			if j == i+1 && j < len(s) {
				j++
			}
			return s[i:j], j, true
		}
		_, sz := utf8.DecodeRuneInString(s[i:])
		return s[i : i+sz], i + sz, true
	}
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[i+1 : j], j + 1, true
			}
		}
	}
	return s[i+1:], len(s), false
}

func isSpacingCmd(s string) bool {
	switch s {
	case "quad", "qquad", "enspace", "thinspace", "medspace", "thickspace", "negthinspace", "negmedspace",
		"negthickspace", "hfill", "space", "nobreak", "allowbreak", "relax":
		return true
	}
	return false
}

func isSizingCmd(s string) bool {
	switch s {
	case "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr",
		"Bigl", "Bigr", "biggl", "biggr", "Biggl", "Biggr", "bigm", "Bigm",
		"middle", "displaystyle", "textstyle", "scriptstyle", "scriptscriptstyle", "limits", "nolimits", "mathstrut",
		"strut":
		return true
	}
	return false
}

func isTextCmd(s string) bool {
	switch s {
	case "text", "textbf", "textit", "textrm", "textsf", "texttt", "textnormal", "textup",
		"mbox", "emph", "hbox", "textsc":
		return true
	}
	return false
}

func isFontCmd(s string) bool {
	switch s {
	case "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "boldsymbol", "bm", "mathnormal",
		"pmb", "mathbb", "mathcal":
		return true
	}
	return false
}

func isGreek(s string) bool {
	switch s {
	case "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta",
		"theta", "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi",
		"omicron", "rho", "varrho", "sigma", "varsigma", "tau", "upsilon", "phi",
		"varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda",
		"Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega", "ell":
		return true
	}
	return false
}

func (lx *lexer) command(s string, i int, mode lexMode) int {
	if i+1 >= len(s) {
		return i + 1
	}
	c := s[i+1]
	if !isLetter(c) {
		switch c {
		case ',', ';', ':', ' ', '>', '\n', '\t':
			lx.space = true
		case '{':
			lx.paren++
			lx.emit(tCmd, "{", false)
		case '}':
			lx.paren--
			lx.emit(tCmd, "}", false)
		case '\\':
			lx.emit(tCmd, "\\", false)
		case '%':
			lx.percent = true
		case '|':
			lx.emit(tOp, "|", false)
		case '&':
			lx.emit(tOp, "&", false)
		}
		// \! \$ \# \( \) \[ \] and the rest carry no value.
		return i + 2
	}
	j := i + 1
	for j < len(s) && isLetter(s[j]) {
		j++
	}
	name := s[i+1 : j]
	switch {
	case isSpacingCmd(name):
		lx.space = true
		if (name == "quad" || name == "qquad") && lx.paren == 0 && mode == modeMath && lx.afterValue() &&
			lx.assigned() && startsItem(s[j:]) {
			lx.emit(tOp, ",", false) // x_1 = 2 \quad x_2 = 3: two answers
		}
		return j
	case isSizingCmd(name):
		k := j
		for k < len(s) && s[k] == ' ' {
			k++
		}
		if k < len(s) && s[k] == '.' {
			return k + 1
		}
		return j
	case isTextCmd(name):
		arg, end, _ := braced(s, j)
		lx.space = true
		lx.run(arg, modeText)
		lx.space = true
		return end
	case name == "mathbb" || name == "R":
		arg, end, _ := braced(s, j)
		if name == "R" || strings.TrimSpace(arg) == "R" {
			// The real line.
			lx.emit(tOp, "(", false)
			lx.emit(tOp, "-", false)
			lx.emit(tCmd, "infty", false)
			lx.emit(tOp, ",", false)
			lx.emit(tCmd, "infty", false)
			lx.emit(tOp, ")", false)
			if name == "R" {
				return j
			}
			return end
		}
		lx.run(arg, modeFont)
		return end
	case isFontCmd(name):
		arg, end, _ := braced(s, j)
		lx.run(arg, modeFont)
		return end
	}
	switch name {
	case "hspace", "vspace", "phantom", "hphantom", "vphantom", "label", "tag", "kern", "mkern":
		_, end, _ := braced(s, j)
		lx.space = true
		return end
	case "operatorname":
		arg, end, _ := braced(s, j)
		arg = strings.TrimSpace(arg)
		if isFuncName(arg) {
			lx.emit(tCmd, arg, false)
		} else {
			lx.run(arg, modeFont)
		}
		return end
	case "boxed", "fbox", "framebox":
		arg, end, closed := braced(s, j)
		if !closed {
			lx.bad = true // a truncated box holds no answer
			return end
		}
		lx.run(arg, mode)
		return end
	case "dfrac", "tfrac", "cfrac":
		lx.emit(tCmd, "frac", false)
	case "dbinom", "tbinom":
		lx.emit(tCmd, "binom", false)
	case "circ", "degree":
		lx.degree = true
	case "lbrace":
		lx.paren++
		lx.emit(tCmd, "{", false)
	case "rbrace":
		lx.paren--
		lx.emit(tCmd, "}", false)
	case "lbrack":
		lx.paren++
		lx.emit(tOp, "[", false)
	case "rbrack":
		lx.paren--
		lx.emit(tOp, "]", false)
	case "langle":
		lx.paren++
		lx.emit(tOp, "(", false)
	case "rangle":
		lx.paren--
		lx.emit(tOp, ")", false)
	case "lvert", "rvert", "vert", "lVert", "rVert", "Vert":
		lx.emit(tOp, "|", false)
	case "le", "leq", "leqslant", "leqq":
		lx.emit(tOp, "<=", false)
	case "ge", "geq", "geqslant", "geqq":
		lx.emit(tOp, ">=", false)
	case "lt":
		lx.emit(tOp, "<", false)
	case "gt":
		lx.emit(tOp, ">", false)
	case "ne", "neq":
		lx.emit(tOp, "!=", false)
	case "cdot", "times", "ast", "cross":
		lx.emit(tOp, "*", false)
	case "div":
		lx.emit(tOp, "/", false)
	case "infty", "infin", "infinity":
		lx.emit(tCmd, "infty", false)
	case "colon":
		lx.emit(tOp, ":", false)
	case "dots", "ldots", "cdots", "vdots", "ddots", "dotsc", "dotsb":
		lx.emit(tCmd, "dots", false)
	case "begin", "end":
		arg, end, _ := braced(s, j)
		arg = strings.TrimSuffix(strings.TrimSpace(arg), "*")
		lx.emit(tCmd, name+":"+arg, false)
		return end
	case "mathrm", "to", "rightarrow", "Rightarrow", "implies":
		lx.emit(tCmd, name, false)
	case "percent":
		lx.percent = true
	case "not":
		if k := j + countSpaces(s[j:]); k < len(s) && s[k] == '=' {
			lx.emit(tOp, "!=", false)
			return k + 1
		}
		lx.emit(tCmd, "not", false)
	case "angle", "measuredangle", "triangle", "sphericalangle":
		lx.space = true
	case "vec", "overline", "overrightarrow", "overleftrightarrow", "hat", "widehat", "bar", "tilde", "widetilde", "underline":
		arg, end, _ := braced(s, j)
		lx.run(arg, mode)
		return end
	case "dollar", "textdollar", "euro", "pounds":
	case "sqrt", "frac", "binom", "pi", "pm", "mp", "cup", "cap", "in", "approx", "sim",
		"lfloor", "rfloor", "lceil", "rceil", "emptyset", "varnothing", "choose", "over",
		"setminus", "equiv", "pmod", "bmod", "mod", "notin", "subset", "subseteq":
		lx.emit(tCmd, name, false)
	default:
		if isGreek(name) {
			lx.emit(tIdent, name, false)
		} else {
			lx.emit(tCmd, name, false)
		}
	}
	return j
}

// degreeAfterCaret reports whether s[i:] (just after '^') is \circ or {\circ}, and its length.
func degreeAfterCaret(s string, i int) (int, bool) {
	k := i
	for k < len(s) && s[k] == ' ' {
		k++
	}
	brace := false
	if k < len(s) && s[k] == '{' {
		brace = true
		k++
		for k < len(s) && s[k] == ' ' {
			k++
		}
	}
	if !strings.HasPrefix(s[k:], "\\circ") || (k+5 < len(s) && isLetter(s[k+5])) {
		return 0, false
	}
	k += 5
	if brace {
		for k < len(s) && s[k] == ' ' {
			k++
		}
		if k >= len(s) || s[k] != '}' {
			return 0, false
		}
		k++
	}
	return k - i, true
}

// skipTempUnit skips the C or F of a temperature such as 30°C.
func skipTempUnit(s string, i int) int {
	k := i
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if k < len(s) && (s[k] == 'C' || s[k] == 'F') && (k+1 == len(s) || !isLetter(s[k+1])) {
		return k + 1
	}
	return i
}

// onlyClosers reports whether s holds nothing but spaces and closing math delimiters, so that a
// period before it ends a sentence.
func onlyClosers(s string) bool {
	for k := 0; k < len(s); k++ {
		switch s[k] {
		case ' ', '\t', '\n', '\r', '$':
		case '\\':
			if k+1 < len(s) && (s[k+1] == ']' || s[k+1] == ')') {
				k++
				continue
			}
			return false
		default:
			return false
		}
	}
	return true
}

// ordinalAfterCaret reports whether s[i:] (just after '^') is an ordinal suffix such as
// {\text{th}} or {nd}, and its length.
func ordinalAfterCaret(s string, i int) (int, bool) {
	arg, end, ok := braced(s, i)
	if !ok {
		return 0, false
	}
	arg = strings.TrimSpace(arg)
	for _, w := range []string{`\text`, `\textrm`, `\mathrm`, `\textnormal`, `\mbox`} {
		if strings.HasPrefix(arg, w+"{") {
			inner, _, closed := braced(arg, len(w))
			if !closed {
				return 0, false
			}
			arg = strings.TrimSpace(inner)
			break
		}
	}
	switch arg {
	case "th", "st", "nd", "rd":
		return end - i, true
	}
	return 0, false
}

func (lx *lexer) punct(s string, i int) int {
	c := s[i]
	two := ""
	if i+1 < len(s) {
		two = s[i : i+2]
	}
	switch two {
	case "**":
		lx.emit(tOp, "^", false)
		return i + 2
	case "<=", "=<":
		lx.emit(tOp, "<=", false)
		return i + 2
	case ">=", "=>":
		lx.emit(tOp, ">=", false)
		return i + 2
	case "!=", "<>":
		lx.emit(tOp, "!=", false)
		return i + 2
	case "==", ":=":
		lx.emit(tOp, "=", false)
		return i + 2
	}
	switch c {
	case '^':
		if n, ok := degreeAfterCaret(s, i+1); ok {
			lx.degree = true
			return skipTempUnit(s, i+1+n)
		}
		if n, ok := ordinalAfterCaret(s, i+1); ok {
			return i + 1 + n
		}
		lx.emit(tOp, "^", false)
	case '%':
		lx.percent = true
	case '&':
		if op, n := htmlEntity(s[i:]); n > 0 {
			if op != "" {
				lx.emit(tOp, op, false)
			}
			return i + n
		}
		lx.emit(tOp, "&", false)
	case '"', '`':
	case '.':
		if !onlyClosers(s[i+1:]) {
			lx.emit(tOp, ".", false)
		}
	case '(', '[':
		lx.paren++
		lx.emit(tOp, s[i:i+1], false)
	case ')', ']':
		lx.paren--
		lx.emit(tOp, s[i:i+1], false)
	case '{':
		if strings.HasPrefix(s[i:], "{,}") {
			lx.emit(tOp, ",", false)
			return i + 3
		}
		lx.emit(tOp, "{", false)
	default:
		lx.emit(tOp, s[i:i+1], false)
	}
	return i + 1
}

func greekRune(r rune) (string, bool) {
	switch r {
	case 'α':
		return "alpha", true
	case 'β':
		return "beta", true
	case 'γ':
		return "gamma", true
	case 'δ':
		return "delta", true
	case 'ε':
		return "epsilon", true
	case 'θ':
		return "theta", true
	case 'λ':
		return "lambda", true
	case 'μ':
		return "mu", true
	case 'σ':
		return "sigma", true
	case 'φ':
		return "phi", true
	case 'ω':
		return "omega", true
	case 'τ':
		return "tau", true
	case 'ρ':
		return "rho", true
	}
	return "", false
}

func (lx *lexer) unicode(s string, i int, mode lexMode) int {
	r, sz := utf8.DecodeRuneInString(s[i:])
	j := i + sz
	switch r {
	case '−', '–', '—', '‐', '‑', '﹣', '－':
		lx.emit(tOp, "-", false)
	case '×', '·', '⋅', '∙', '∗':
		lx.emit(tOp, "*", false)
	case '÷', '∕':
		lx.emit(tOp, "/", false)
	case 'π':
		lx.emit(tCmd, "pi", false)
	case '∞':
		lx.emit(tCmd, "infty", false)
	case '√':
		lx.emit(tCmd, "sqrt", false)
	case '≤', '⩽':
		lx.emit(tOp, "<=", false)
	case '≥', '⩾':
		lx.emit(tOp, ">=", false)
	case '≠':
		lx.emit(tOp, "!=", false)
	case '≈':
		lx.emit(tCmd, "approx", false)
	case '∪':
		lx.emit(tCmd, "cup", false)
	case '∩':
		lx.emit(tCmd, "cap", false)
	case '∈':
		lx.emit(tCmd, "in", false)
	case '±':
		lx.emit(tCmd, "pm", false)
	case '∓':
		lx.emit(tCmd, "mp", false)
	case '°', '∘':
		lx.degree = true
		return skipTempUnit(s, j)
	case '²':
		lx.emit(tOp, "^", false)
		lx.emit(tNum, "2", false)
	case '³':
		lx.emit(tOp, "^", false)
		lx.emit(tNum, "3", false)
	case '½':
		lx.emitFrac("1", "2")
	case '¼':
		lx.emitFrac("1", "4")
	case '¾':
		lx.emitFrac("3", "4")
	case '⟨':
		lx.emit(tOp, "(", false)
	case '⟩':
		lx.emit(tOp, ")", false)
	case '‘', '’', '′':
		lx.emit(tOp, "'", false)
	case '“', '”', '€', '£', '¥', '₹', '₽', '₩', '₺', '₫', '₱', '₦', '\u200b', '\ufeff':
	case '\u00a0', '\u2002', '\u2003', '\u2009', '\u202f', '\u3000':
		lx.space = true
	case '∅':
		lx.emit(tCmd, "emptyset", false)
	case '％':
		lx.percent = true
	default:
		if g, ok := greekRune(r); ok {
			lx.emit(tIdent, g, false)
		} else if isWordRune(r) {
			return lx.word(s, i, mode)
		} else {
			lx.emit(tOp, s[i:j], false)
		}
	}
	return j
}

func (lx *lexer) emitFrac(a, b string) {
	lx.emit(tCmd, "frac", false)
	lx.emit(tNum, a, false)
	lx.emit(tNum, b, false)
}

// canon renders tokens as a compact canonical string: equal strings mean equal token streams.
func canon(toks []token) string {
	var b strings.Builder
	n := 0
	for _, t := range toks {
		n += len(t.text) + 2
	}
	b.Grow(n)
	var prevAlnum, prevCmd, prevWord bool
	for _, t := range toks {
		first := t.text[0]
		alnumStart := isDigit(first) || isLetter(first)
		if t.kind == tCmd {
			if t.text == "{" || t.text == "}" || t.text == "\\" {
				b.WriteByte('\\')
				b.WriteString(t.text)
				prevAlnum, prevCmd, prevWord = false, false, false
				continue
			}
			if env, ok := strings.CutPrefix(t.text, "begin:"); ok {
				b.WriteString(`\begin{` + env + "}")
				prevAlnum, prevCmd, prevWord = false, false, false
				continue
			}
			if env, ok := strings.CutPrefix(t.text, "end:"); ok {
				b.WriteString(`\end{` + env + "}")
				prevAlnum, prevCmd, prevWord = false, false, false
				continue
			}
			b.WriteByte('\\')
			b.WriteString(t.text)
			prevAlnum, prevCmd, prevWord = false, true, false
			continue
		}
		if t.kind == tIdent && len(t.text) > 1 {
			b.WriteByte('\\')
			b.WriteString(t.text)
			prevAlnum, prevCmd, prevWord = false, true, false
			continue
		}
		if (prevAlnum && alnumStart && (t.kind != tIdent || isDigit(first))) || (prevCmd && isLetter(first)) ||
			(t.kind == tWord && b.Len() > 0) || (prevWord && alnumStart) {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
		last := t.text[len(t.text)-1]
		prevAlnum = isDigit(last) || isLetter(last)
		if t.kind == tIdent {
			// "x y" and "xy" mean the same product.
			prevAlnum = false
		}
		prevCmd, prevWord = false, t.kind == tWord
	}
	return b.String()
}

// commaFraction reads ",75" at s[j:] as the fraction part of a decimal comma: digits right
// after the comma, not another comma-and-digit after them (that is a list) and not a point.
func commaFraction(s string, j int) (int, bool) {
	if j+1 >= len(s) || s[j] != ',' || !isDigit(s[j+1]) {
		return 0, false
	}
	k := j + 1
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	if k < len(s) && (s[k] == '.' || s[k] == '_') {
		return 0, false
	}
	if k+1 < len(s) && s[k] == ',' && isDigit(s[k+1]) {
		return 0, false
	}
	return k, true
}

// afterListComma reports whether the number at s[start:] follows "digit," (the second
// member of a list such as 1,2,3).
func afterListComma(s string, start int) bool {
	return start >= 2 && s[start-1] == ',' && isDigit(s[start-2])
}

// dottedThousands reads numbers grouped by points in the continental way: 1.234.567 (two or
// more groups) or 1.234,5 (groups, then a decimal comma; outside brackets only).
func dottedThousands(s string, start, j int, top bool) (int, string, bool) {
	if n := j - start; n < 1 || n > 3 || s[start] == '0' && n > 1 {
		return 0, "", false
	}
	k, groups := j, 0
	for k+4 <= len(s) && s[k] == '.' && threeDigitsAt(s, k+1) {
		k += 4
		groups++
	}
	if groups == 0 {
		return 0, "", false
	}
	digits := strings.ReplaceAll(s[start:k], ".", "")
	if top {
		if end, ok := commaFraction(s, k); ok {
			return end, digits + "." + s[k+1:end], true
		}
	}
	if (groups >= 2 || groups == 1 && s[start] != '0' && currencyAfter(s[k:])) && (k == len(s) || s[k] != '.') {
		return k, digits, true
	}
	return 0, "", false
}

// currencyAfter reports a currency sign or word right after a number, with at most a space
// between: "1.500€", "1.500 €", "1.500 руб". A price never has three decimals, so a point
// before three digits groups thousands there.
func currencyAfter(s string) bool {
	s = strings.TrimLeft(s, " \u00a0\u202f")
	for _, c := range [...]string{"€", "£", "₽", "₺", "₴", "₫", "руб", "EUR", "euro", "Euro", "reais", "R$", "kr", "pesos",
		"peso", "rublos", "рубл", "zł", "złot", "Kč", "Ft", "VND", "đồng", "COP", "ARS", "CLP", "MXN", "BRL", "lei"} {
		if strings.HasPrefix(s, c) {
			return true
		}
	}
	return false
}

func isApproxWord(w string) bool {
	switch strings.ToLower(w) {
	case "approximately", "approx", "roughly", "about", "around", "nearly", "circa", "environ", "aproximadamente", "约", "大约", "约为", "約", "大約",
		"约等于", "approssimativamente", "ungefähr", "etwa":
		return true
	}
	return false
}

// cjkMultiplier gives the value of a CJK numeral multiplier that follows a number (3万 is
// 30000), unless it is the prefix of a unit (千克 is a kilogram).
func cjkMultiplier(w string) (string, int) {
	r, sz := utf8.DecodeRuneInString(w)
	var v string
	switch r {
	case '万', '萬':
		v = "10000"
	case '亿', '億':
		v = "100000000"
	case '千':
		v = "1000"
	case '百':
		v = "100"
	default:
		return "", 0
	}
	if next, _ := utf8.DecodeRuneInString(w[sz:]); (r == '千' || r == '百') && strings.ContainsRune("克米瓦卡帕焦赫伏秒分字", next) {
		return "", 0
	}
	return v, sz
}

// word lexes a run of letters of any script that starts at s[i]: a word of text, a unit such
// as 千克 or 页, an approximation word, a percent prefix (百分之) or a CJK multiplier.
func (lx *lexer) word(s string, i int, mode lexMode) int {
	j := i
	for j < len(s) {
		r, sz := utf8.DecodeRuneInString(s[j:])
		if !isWordRune(r) {
			break
		}
		j += sz
	}
	w := s[i:j]
	if rest, ok := strings.CutPrefix(w, "百分之"); ok {
		lx.percent = true
		w = rest
	}
	if n := len(lx.toks); n > 0 && lx.toks[n-1].kind == tNum {
		if v, sz := cjkMultiplier(w); sz > 0 {
			lx.emit(tOp, "*", false)
			lx.emit(tNum, v, false)
			w = w[sz:]
		}
	}
	switch {
	case w == "":
	case isApproxWord(w):
		lx.emit(tCmd, "approx", false)
	case isPercentWord(w):
		lx.percent = true
	case isDegreeWord(w):
		lx.degree = true
	default:
		lx.emit(tWord, w, mode == modeText)
	}
	return j
}

// htmlEntity reads an HTML-escaped relation or space at the start of s: the operator it stands
// for and its length.
func htmlEntity(s string) (string, int) {
	for _, e := range [...][2]string{
		{"&lt;=", "<="}, {"&gt;=", ">="}, {"&lt;", "<"}, {"&gt;", ">"}, {"&le;", "<="}, {"&ge;", ">="},
		{"&ne;", "!="}, {"&nbsp;", ""}, {"&amp;", "&"},
	} {
		if strings.HasPrefix(s, e[0]) {
			return e[1], len(e[0])
		}
	}
	return "", 0
}

func isCurrencyWord(w string) bool {
	switch w {
	case "Rs", "INR", "USD", "EUR", "GBP", "RMB", "CNY", "JPY", "Rp":
		return true
	}
	return false
}

// perCent returns the length of " cent" at s[j:] (after "per", "pour" or "por"; also
// "cento", "ciento"), or 0.
func perCent(s string, j int) int {
	k := j + countSpaces(s[j:])
	if k == j {
		return 0
	}
	for _, w := range [...]string{"cento", "ciento", "cent"} {
		if hasPrefixFold(s[k:], w) && (k+len(w) == len(s) || !isLetter(s[k+len(w)])) {
			return k + len(w) - j
		}
	}
	return 0
}

// letterProduct reports whether the run of letters s[i:j] is a product of symbols rather than
// a word: three to five distinct lower-case letters that are no known word or unit, glued to
// math ("2abc", "bca^2", "abc + bcd"). A run that stands alone ("abc") stays a word.
func letterProduct(s string, i, j int) bool {
	w := s[i:j]
	if len(w) < 3 || len(w) > 5 || knownWord(w) {
		return false
	}
	var seen uint32
	for k := 0; k < len(w); k++ {
		c := w[k]
		if c < 'a' || c > 'z' || seen&(1<<(c-'a')) != 0 {
			return false
		}
		seen |= 1 << (c - 'a')
	}
	if i > 0 && strings.IndexByte("0123456789)}^{", s[i-1]) >= 0 {
		return true
	}
	if j < len(s) && strings.IndexByte("^_({}", s[j]) >= 0 {
		return true
	}
	before := strings.TrimRight(s[:i], " ")
	after := strings.TrimLeft(s[j:], " ")
	return before != "" && strings.IndexByte("+-*=", before[len(before)-1]) >= 0 || // "/month" is a unit
		after != "" && strings.IndexByte("+-*/=", after[0]) >= 0
}

// knownWord lists short words and units that are never a product of letters.
func knownWord(w string) bool {
	switch w {
	case "the", "for", "not", "are", "all", "any", "but", "can", "has", "its", "one", "two", "six", "ten", "yes",
		"per", "sum", "mod", "deg", "rad", "sec", "min", "max", "hrs", "mph", "kph", "kmh", "rpm", "lbs", "yds", "pts",
		"cal", "mol", "day", "yrs", "mos", "wks", "gal", "qts", "pcs", "cms", "mins", "secs", "days", "hour", "year",
		"week", "kgs", "sqft", "ohm", "volt", "amp", "amps", "watt", "feet", "inch", "mile", "pint", "cup", "cups",
		"tsp", "tbsp", "dozen", "five", "four", "nine", "from", "with", "than", "less", "more", "half", "cent",
		"cents", "euro", "yen", "yuan", "unit", "units", "now", "get", "got", "set", "let", "our", "out", "new",
		"month", "hours", "weeks", "years", "meter", "metre", "liter", "litre", "gram", "grams", "item", "items",
		"page", "pages", "box", "boxes", "miles", "kmph", "dollar", "pound", "point", "points",
		"area", "side", "cost", "price", "total", "only", "each", "both", "then", "thus", "hence", "gcd", "lcm",
		"dim", "ker", "det", "arg", "exp", "log", "sin", "cos", "tan", "cot", "csc":
		return true
	}
	return false
}

// indianGroups reads a number grouped in the Indian way, in lakhs and crores, in an answer
// that speaks of rupees: "₹1,50,000" is 150000, "Rs. 15,00,000" is 1500000. The groups are
// of two digits, the last of three.
func indianGroups(s string, start, j int) (int, string, bool) {
	if n := j - start; n < 1 || n > 2 || s[start] == '0' || j+3 >= len(s) || s[j] != ',' {
		return 0, "", false
	}
	k, pairs := j, 0
	for k+3 < len(s) && s[k] == ',' && isDigit(s[k+1]) && isDigit(s[k+2]) && s[k+3] == ',' {
		k += 3
		pairs++
	}
	if pairs == 0 || !threeDigitsAt(s, k+1) || s[k] != ',' {
		return 0, "", false
	}
	if !strings.Contains(s, "₹") && !strings.Contains(s, "Rs") && !strings.Contains(s, "INR") &&
		!strings.Contains(s, "rupee") && !strings.Contains(s, "lakh") && !strings.Contains(s, "crore") {
		return 0, "", false
	}
	end := k + 4
	if end < len(s) && s[end] == ',' && end+1 < len(s) && isDigit(s[end+1]) {
		return 0, "", false
	}
	return end, strings.ReplaceAll(s[start:end], ",", ""), true
}

// afterValue reports whether the last token ends a value: a number, a symbol or a closing
// bracket.
func (lx *lexer) afterValue() bool {
	n := len(lx.toks)
	if n == 0 {
		return false
	}
	t := lx.toks[n-1]
	return t.kind == tNum || t.kind == tIdent || t.kind == tOp && (t.text == ")" || t.text == "]") ||
		t.kind == tCmd && (t.text == "}" || t.text == "pi" || t.text == "infty")
}

// assigned reports an "=" among the tokens so far: "x_1 = 2 \quad x_2 = 3" lists answers,
// "2x \quad + 1" is spaced.
func (lx *lexer) assigned() bool {
	for _, t := range lx.toks {
		if t.kind == tOp && t.text == "=" {
			return true
		}
	}
	return false
}

// startsItem reports whether s (after spaces) starts a new item rather than continuing an
// expression with an operator.
func startsItem(s string) bool {
	s = strings.TrimLeft(s, " ")
	return s != "" && strings.IndexByte("+-*/^=<>)]},.;&|_!", s[0]) < 0
}

// afterSymbol reports whether the last token is a symbol, a constant or an operator, after
// which letters are math rather than the unit of a number.
func (lx *lexer) afterSymbol() bool {
	n := len(lx.toks)
	if n == 0 {
		return false
	}
	t := lx.toks[n-1]
	switch t.kind {
	case tIdent:
		return !t.fromText
	case tCmd:
		return t.text == "pi" || t.text == "cdot" || t.text == "times"
	case tOp:
		return strings.Contains("+-*=^(", t.text) // not "/": 45/hr is a rate
	}
	return false
}
