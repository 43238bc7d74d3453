package verify

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the sentence reader.
const (
	maxSegments    = 256  // segments of one sentence
	maxSentenceLen = 2000 // a longer final sentence is not read
	keptSentences  = 8    // sentences remembered from the end of a text
)

type segKind uint8

const (
	segMath  segKind = iota + 1 // $...$, $$...$$, \(...\), \[...\]; text is the content
	segWord                     // a word: two or more Latin letters, or letters of another script
	segPlain                    // numbers, operators, single letters and LaTeX outside math
	segPunct                    // , ; : — between clauses
)

type segment struct {
	kind segKind
	text string
}

// segments splits one sentence into math blocks, words, plain math and clause punctuation,
// appended to out.
func segments(out []segment, s string) []segment {
	i, first := 0, len(out)
	for i < len(s) && len(out)-first < maxSegments {
		r, sz := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r) || r == '*':
			i += sz
		case r == '$' || strings.HasPrefix(s[i:], `\(`) || strings.HasPrefix(s[i:], `\[`):
			if body, n, ok := mathBlock(s[i:]); ok {
				out = append(out, segment{segMath, body})
				i += n
				continue
			}
			n := plainRun(s[i:])
			out = append(out, segment{segPlain, s[i : i+n]})
			i += n
		case strings.ContainsRune(",;:—，；：", r):
			out = append(out, segment{segPunct, s[i : i+sz]})
			i += sz
		case isWordRune(r) && !plainWordAt(s, i):
			n := wordRun(s[i:])
			out = append(out, segment{segWord, s[i : i+n]})
			i += n
		default:
			n := plainRun(s[i:])
			if n == 0 {
				n = sz
			}
			out = append(out, segment{segPlain, s[i : i+n]})
			i += n
		}
	}
	return out
}

// mathBlock reads a math span at the start of s. A "$" pair whose content reads as prose ("$15
// and $20") is money, not math.
func mathBlock(s string) (string, int, bool) {
	body, n, ok := leadingMath(s)
	if !ok || strings.TrimSpace(body) == "" {
		return "", 0, false
	}
	if s[0] == '$' && !strings.HasPrefix(s, "$$") && (hasProseWord(body) || moneyPair(body, s[n:])) {
		return "", 0, false
	}
	return body, n, true
}

// moneyPair reports a "$" pair that is two amounts of money: "$6 + $2" reads "6 + " between
// its signs, an operation that ends on its operator before a number.
func moneyPair(body, after string) bool {
	b := strings.TrimRight(body, " ")
	return startsDigit(strings.TrimSpace(body)) && b != "" && strings.IndexByte("+-*/=", b[len(b)-1]) >= 0 && startsDigit(after)
}

// hasProseWord reports a word of three or more letters outside braces that is not a LaTeX
// command nor capitals naming points (ABC).
func hasProseWord(s string) bool {
	run, depth, small := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '{':
			depth++
		case c == '}':
			depth--
		case isLetter(c) && depth == 0:
			if run == 0 && i > 0 && s[i-1] == '\\' {
				run = -1000 // a command name
			}
			run++
			small = small || c >= 'a'
			if run >= 3 && small {
				return true
			}
			continue
		}
		run, small = 0, false
	}
	return false
}

// plainWordAt reports whether the letters at s[i:] are math rather than prose: one Latin
// letter used as a symbol (x = 5, 2x, f(x)) or a function name before its argument.
func plainWordAt(s string, i int) bool {
	n := wordRun(s[i:])
	w := s[i : i+n]
	after := strings.TrimLeft(s[i+n:], " ")
	if n <= 3 && isASCIIWord(w) && after != "" && strings.IndexByte("=<>^_", after[0]) >= 0 && !strings.HasPrefix(after, "=>") {
		return true // AB = 4, ab^2
	}
	if n <= 3 && isASCIIWord(w) && len(after) >= 2 && strings.IndexByte("+-*/", after[0]) >= 0 && after[1] == ' ' &&
		i+n < len(s) && s[i+n] == ' ' && !danglingWord(w) && !isHedge(w) && !copulaWord(w) {
		return true // mgh + \frac{1}{2}mv^2
	}
	if n == 1 && isLetter(w[0]) {
		if i > 0 && (isDigit(s[i-1]) || s[i-1] == '\\') {
			return true
		}
		if after == "" {
			return w != "a" && w != "A" && w != "I"
		}
		r, _ := utf8.DecodeRuneInString(after)
		return !isWordRune(r) && !unicode.IsDigit(r) // "a number", "a 5% chance"
	}
	switch w {
	case "sqrt", "cbrt", "pi", "sin", "cos", "tan", "log", "ln", "exp", "infty", "infinity", "theta", "alpha", "beta",
		"gamma", "delta", "lambda", "omega", "phi":
		// pi/2, 2pi, sqrt(3), theta + pi: a constant or a function written in plain text
		glued := i+n < len(s) && strings.IndexByte("({/*^_0123456789", s[i+n]) >= 0
		if glued || i > 0 && strings.IndexByte("0123456789*/^(+-", s[i-1]) >= 0 {
			return true
		}
		return after == "" && i > 0 || after != "" && strings.IndexByte("+-*/^=<>)0123456789", after[0]) >= 0
	}
	return false
}

// wordRun is the length of the run of letters at the start of s; Han text and Latin letters
// are separate runs.
func wordRun(s string) int {
	r0, _ := utf8.DecodeRuneInString(s)
	han := isHan(r0)
	i := 0
	for i < len(s) {
		r, sz := utf8.DecodeRuneInString(s[i:])
		if !(isWordRune(r) || r == '\'' || r == '’') || isHan(r) != han {
			break
		}
		i += sz
	}
	return i
}

// plainRun is the length of plain math at the start of s: numbers, operators, brackets,
// symbols and LaTeX commands, across spaces while math continues.
func plainRun(s string) int {
	i := 0
	for i < len(s) {
		r, sz := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\':
			j := i + 1
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			if j == i+1 && j < len(s) {
				j++
			}
			for j < len(s) && s[j] == '{' {
				_, end, _ := braced(s, j)
				j = end
			}
			i = j
		case r == ' ':
			rest := strings.TrimLeft(s[i:], " ")
			if rest == "" || !continuesPlain(rest) {
				return i
			}
			i += len(s[i:]) - len(rest)
		case r == ',':
			rest := strings.TrimLeft(s[i+1:], " ")
			if rest == "" || !continuesPlain(rest) {
				return i
			}
			i++
		case r == '.':
			if i+1 < len(s) && isDigit(s[i+1]) {
				i++
				continue
			}
			return i
		case r == '$':
			i++ // money: $15
		case r == '&':
			_, n := htmlEntity(s[i:])
			if n == 0 {
				return i
			}
			i += n
		case isWordRune(r):
			if !plainWordAt(s, i) {
				return i
			}
			i += wordRun(s[i:])
		case unicode.IsDigit(r) || strings.ContainsRune("+-*/^=<>()[]{}|!%'_~−×÷·±√π∞≤≥≠≈°²³€£¥₹", r):
			i += sz
		default:
			return i
		}
	}
	return i
}

// continuesPlain reports whether plain math goes on at s (after a space or a comma).
func continuesPlain(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	if unicode.IsDigit(r) || strings.ContainsRune("+-*/^=<>()[]{|!%−×÷·±√π∞≤≥≠≈\\€£¥₹₽", r) || r == '$' && len(s) > 1 && isDigit(s[1]) {
		return true
	}
	return isWordRune(r) && plainWordAt(s, 0)
}

// isValueSeg reports whether a segment states a value: math, or plain text with a digit, a
// LaTeX command or a symbol such as π, or a wrapped choice letter "(C)".
func isValueSeg(sg segment) bool {
	switch sg.kind {
	case segMath:
		return true
	case segPlain:
		t := strings.TrimSpace(sg.text)
		if len(t) == 3 && t[0] == '(' && t[2] == ')' && t[1] >= 'A' && t[1] <= 'J' {
			return true
		}
		return strings.IndexFunc(t, func(r rune) bool { return unicode.IsDigit(r) || strings.ContainsRune(`\π∞√`, r) }) >= 0
	}
	return false
}

// isProse reports whether s is a sentence rather than a bare answer: a word other than a
// connector comes before its first value ("Therefore the probability is 3/8", "小明有15个"),
// unlike "12 apples", "28 per cent" or "3 apples and 4 oranges".
func isProse(s string) bool {
	var store [8]segment
	for _, sg := range segments(store[:0], s) {
		switch {
		case isValueSeg(sg):
			return false
		case sg.kind == segWord && !isConnector(sg.text):
			return true
		}
	}
	return false
}

func isConnector(w string) bool {
	switch strings.ToLower(w) {
	case "and", "or", "et", "y", "und", "o", "ou", "和", "或", "及", "与":
		return true
	}
	return false
}

// isHedge reports words that make a clause negated, hedged, conditional or an example: a
// value stated in such a clause is not the answer.
func isHedge(w string) bool {
	switch strings.ToLower(strings.Trim(w, "'’")) {
	case "not", "no", "never", "neither", "nor", "isn't", "isn’t", "aren't", "wasn't", "weren't", "can't",
		"cannot", "couldn't", "won't", "wouldn't", "don't", "doesn't", "didn't", "maybe", "perhaps", "possibly",
		"might", "could", "if", "unless", "suppose", "supposing", "assume", "assuming",
		"unsure", "uncertain", "wrong", "incorrect", "instead", "rather", "except", "like", "example",
		"e.g", "etc", "pas", "non", "ne", "n'est", "nicht", "kein", "keine", "niet",
		"peut-être", "quizás", "quizá", "tal", "vielleicht", "si", "wenn", "falls", "не", "нет", "ليس", "لا",
		"ربما", "إذا", "नहीं", "शायद", "अगर", "यदि", "check", "checking", "verify", "verifying", "try", "trying",
		"think", "believe", "guess", "probably", "likely", "about", "around", "approximately", "approx", "roughly",
		"nearly", "almost", "estimate", "estimated", "consider", "considering", "prove", "show", "peut",
		"probablement", "environ", "wahrscheinlich", "etwa", "ungefähr", "probablemente", "aproximadamente",
		"возможно", "наверное", "примерно", "около":
		return true
	}
	if r, _ := utf8.DecodeRuneInString(w); isHan(r) {
		for _, n := range [...]string{"不", "非", "没", "可能", "也许", "如果", "假设", "若", "例如"} {
			if strings.Contains(w, n) {
				return true
			}
		}
	}
	return false
}

// planStarts open a clause that says what will be done, not what was found.
var planStarts = [...]string{
	"let", "let's", "lets", "we need to", "we have to", "we want", "we will", "we'll", "we can", "we should",
	"i will", "i'll", "i need to", "to find", "to compute", "to solve", "to get", "compute", "calculate", "find",
	"determine", "consider", "recall", "next", "now we", "then we need", "step", "and so on",
}

func isPlan(words []string) bool {
	lead := strings.ToLower(strings.Join(words[:min(3, len(words))], " "))
	for _, p := range planStarts {
		if lead == p || strings.HasPrefix(lead, p+" ") {
			return true
		}
	}
	return false
}

// isClauseWord reports words that start a new clause: "but", "however", "mais", "但是".
func isClauseWord(w string) bool {
	switch strings.ToLower(w) {
	case "but", "however", "although", "though", "whereas", "mais", "pero", "sino", "aber", "但", "但是", "而", "then", "so":
		return true
	}
	return false
}

// numberedWords name things a number only labels: "Step 3", "case 2", "part 1".
func numberedWord(w string) bool {
	switch strings.ToLower(w) {
	case "step", "case", "part", "problem", "question", "equation", "line", "page", "figure", "example",
		"exercise", "method", "lemma", "theorem", "chapter", "section", "round", "day", "option":
		return true
	}
	return false
}

// statedValue returns the value a sentence states: the last value of its last clause that is
// neither negated, hedged, conditional nor a plan. Values joined by "and" or commas make a list;
// "3 + 4 = 7" states 7.
func statedValue(s string) (string, bool) {
	segs := segments(nil, s)
	if planSentence(segs) || incomplete(sentenceWords(segs)) {
		return "", false
	}
	end := len(segs)
	doubts := doubtful(segs)
	for end > 0 {
		start := clauseStart(segs, end)
		concluded := !doubts && start > 0 && segs[start-1].kind == segWord && conclusionWord(segs[start-1].text)
		if v, ok := clauseValue(segs[start:end], concluded, doubts); ok && !conditionalAt(segs, start) && !hedgedLead(segs, start) {
			return v, true
		}
		end = start
		for end > 0 && (segs[end-1].kind == segPunct || isClauseWord(segs[end-1].text)) {
			end--
		}
	}
	return "", false
}

// clauseStart finds where the clause ending at end begins: after clause punctuation (not a
// comma between two values) or before a clause word.
func clauseStart(segs []segment, end int) int {
	for k := end - 1; k > 0; k-- {
		prev := segs[k-1]
		if prev.kind == segPunct {
			listComma := (prev.text == "," || prev.text == "，") && k >= 2 && isValueSeg(segs[k-2]) && isValueSeg(segs[k])
			if !listComma {
				return k
			}
		}
		if prev.kind == segWord && isClauseWord(prev.text) {
			return k
		}
	}
	return 0
}

// clauseValue is the value a clause states; concluded tells that a conclusion word opens it
// ("so", "therefore"), which makes "I think" an opinion the clause concludes on, not a hedge.
func clauseValue(clause []segment, concluded, doubts bool) (string, bool) {
	var words []string
	for _, sg := range clause {
		if sg.kind == segWord {
			concluded = concluded || !doubts && conclusionWord(sg.text)
			if isHedge(sg.text) && !(concluded && opinionWord(sg.text)) {
				return "", false
			}
			words = append(words, sg.text)
		}
	}
	if len(words) > 0 && isPlan(words) || incomplete(words) || procedural(clause, words) {
		return "", false
	}
	if k := len(clause) - 1; k >= 1 {
		p := k - 1
		if p >= 1 && clause[p].kind == segWord && conclusionWord(clause[p].text) {
			p-- // "the correct choice is therefore B"
		}
		if choiceAfterCopula(clause[p], clause[k]) {
			return strings.TrimSpace(clause[k].text), true // "therefore I think it's B"
		}
	}
	last := -1
	for k := len(clause) - 1; k >= 0; k-- {
		if isValueSeg(clause[k]) && (k == 0 || clause[k-1].kind != segWord || !numberedWord(clause[k-1].text)) &&
			(k+1 == len(clause) || clause[k+1].kind != segWord || !metaNoun(clause[k+1].text)) {
			last = k
			break
		}
	}
	if last < 0 {
		return "", false
	}
	first := last
	for first >= 2 && isValueSeg(clause[first-2]) &&
		(clause[first-1].kind == segPunct && clause[first-1].text == "," || clause[first-1].kind == segWord && isConnector(clause[first-1].text)) {
		first -= 2
	}
	var parts []string
	for k := first; k <= last; k += 2 {
		if v := valueText(clause[k]); v != "" {
			parts = append(parts, v)
		}
	}
	if len(parts) == 0 || strings.HasPrefix(parts[0], "≈") || strings.HasPrefix(parts[0], `\approx`) {
		return "", false // an approximation note
	}
	if len(parts) == 1 {
		if last+1 < len(clause) && clause[last+1].kind == segWord && currencyAfter(clause[last+1].text) {
			parts[0] += " " + clause[last+1].text // "1.500 pesos": the currency tells the thousands
		}
		return resultOf(parts[0], curveWord(words)), true
	}
	return strings.Join(parts, ", "), true
}

// doubtful reports a sentence that says its writer is not sure: "not sure", "unsure",
// "unclear". Its "I think" stays a hedge whatever concludes it.
func doubtful(segs []segment) bool {
	prev := ""
	for _, sg := range segs {
		if sg.kind != segWord {
			continue
		}
		w := strings.ToLower(sg.text)
		switch {
		case w == "unsure" || w == "uncertain" || w == "unclear":
			return true
		case (w == "sure" || w == "certain") && (prev == "not" || strings.HasSuffix(prev, "n't") || strings.HasSuffix(prev, "n’t")):
			return true
		}
		prev = w
	}
	return false
}

// opinionWord reports "think" and "believe": a hedge, unless the clause concludes on it
// ("so I think it's B").
func opinionWord(w string) bool {
	switch strings.ToLower(w) {
	case "think", "believe":
		return true
	}
	return false
}

// hedgedLead reports a clause that follows a colon after a hedged lead: "Here is an example:
// $\frac{1}{3}$", "It might be: 5".
func hedgedLead(segs []segment, start int) bool {
	if start == 0 || segs[start-1].kind != segPunct || (segs[start-1].text != ":" && segs[start-1].text != "：") {
		return false
	}
	for _, sg := range segs[clauseStart(segs, start-1) : start-1] {
		if sg.kind == segWord && isHedge(sg.text) && !opinionWord(sg.text) {
			return true
		}
	}
	return false
}

// choiceAfterCopula reports a choice letter that ends a clause right after its copula:
// "it's B", "the right one is C", "c'est D".
func choiceAfterCopula(prev, sg segment) bool {
	t := strings.TrimSpace(sg.text)
	if sg.kind != segPlain || len(t) != 1 || t[0] < 'A' || t[0] > 'J' || t == "I" || prev.kind != segWord {
		return false
	}
	switch strings.ToLower(prev.text) {
	case "it's", "it’s", "that's", "that’s", "c'est", "c’est":
		return true
	}
	return copulaWord(prev.text)
}

// valueText is the answer text of a value segment, without sentence punctuation, a leading
// "=" or a currency sign.
func valueText(sg segment) string {
	t := strings.TrimSpace(sg.text)
	if sg.kind == segPlain {
		t = strings.TrimLeft(t, "=:$ ")
		t = strings.TrimRight(t, ".,;'’ ") // 7'dir: a Turkish suffix after an apostrophe
	}
	return cleanAnswer(t)
}

// resultOf reads what a computed value states: "3 + 4 = 7" is 7, and so is "a + b = 7" (the
// quantity asked for, written out) unless the sentence speaks of an equation or a curve. A
// label ("x = 5") or an equation with numbers on the left ("2x = 4", "x^2 + y^2 = 25") stays as
// it is, for Compare reads labels itself.
func resultOf(v string, curve bool) string {
	i := strings.IndexByte(v, '=')
	if i <= 0 || strings.ContainsAny(v, "<>") {
		return v
	}
	rhs := cleanAnswer(v[strings.LastIndexByte(v, '=')+1:])
	if len(rhs) > 1 && rhs[0] == '$' && isDigit(rhs[1]) {
		rhs = rhs[1:] // "$6 + $2 = $8" is 8
	}
	lhs := lex(v[:i], false)
	if rhs == "" || lhs.bad || len(lhs.toks) == 0 {
		return v
	}
	if !hasSymbols(lhs.toks) {
		return rhs
	}
	if curve || hasNumber(lhs.toks) || symbolCount(lhs.toks) < 2 {
		return v
	}
	if r := lex(rhs, false); r.bad || hasSymbols(r.toks) {
		return v
	}
	if _, ok := parse(lhs.toks); !ok {
		return v
	}
	if n, _ := parse(lhs.toks); isLabel(n) {
		return v
	}
	return rhs
}

func hasNumber(toks []token) bool {
	for _, t := range toks {
		if t.kind == tNum {
			return true
		}
	}
	return false
}

func symbolCount(toks []token) int {
	n := 0
	for _, t := range toks {
		if t.kind == tIdent && !t.fromText {
			n++
		}
	}
	return n
}

// curveWord reports words that make "... = 25" an equation to keep whole.
func curveWord(words []string) bool {
	for _, w := range words {
		switch strings.ToLower(w) {
		case "equation", "equations", "line", "circle", "curve", "plane", "parabola", "ellipse", "hyperbola",
			"graph", "locus", "relation", "relationship", "équation", "ecuación", "方程", "方程为", "方程是":
			return true
		}
	}
	return false
}

// signOff reports a closing sentence that is not part of the solution.
func signOff(s string) bool {
	low := strings.ToLower(strings.TrimLeft(s, " *_"))
	for _, p := range [...]string{"i hope", "hope this", "hope it", "let me know", "feel free", "thank", "good luck",
		"cheers", "please let", "enjoy", "happy to help", "if you have"} {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0
}

// textEnd is how a text ends: its final sentence (not a sign-off, trimmed), whether the text
// has more than one sentence, where the math span it stops in opens (-1 when it stops outside
// math), and whether the final sentence runs to the end of the text with no full stop.
type textEnd struct {
	sentence string
	several  bool
	openAt   int
	atEnd    bool
}

// readEnd reads how text ends, in one pass over it.
func readEnd(text string) textEnd {
	s, end, several, openAt := finalSentence(text)
	return textEnd{sentence: strings.TrimSpace(s), several: several, openAt: openAt, atEnd: strings.TrimSpace(text[end:]) == ""}
}

// fromLastSentence is the last resort of extraction: the value stated in the final sentence
// of text, which ends as te says. A final sentence without its full stop is read like any
// other, unless it stops inside a bracket ("(3, 5"), or guess is set (the finish reason is
// unknown and no end token follows the text) and it visibly stops mid-sentence after its value
// ("so after 12 turns the total"; see [unfinishedTail]).
func fromLastSentence(text string, te textEnd, guess bool) (string, bool) {
	if te.openAt >= 0 {
		return "", false // the text stops inside a math span
	}
	s := te.sentence
	if s == "" || len(s) > maxSentenceLen || strings.HasPrefix(s, "#") {
		return "", false
	}
	if strings.HasSuffix(s, "?") || strings.HasSuffix(s, ":") || strings.HasSuffix(s, "：") || strings.HasSuffix(s, "？") {
		return "", false
	}
	if !isProse(s) && (!te.several || countWords(text, 2) < 2) {
		return "", false // a bare answer, not a sentence
	}
	var store [32]segment
	segs := segments(store[:0], s)
	if danglingEnd(segs, te.atEnd) || bracketsOpen(s) {
		return "", false // "..., and", "so each group gets", "(3, 5": the value never comes
	}
	if guess && te.atEnd && unfinishedTail(segs) {
		return "", false // "so after 12 turns the total": cut off before its value
	}
	if opensStep(s) || optionList(s) {
		// "Now, the first basket holds 12 apples.": a text that stops on the way; "C: 2 + 2 =
		// 3, wrong.": a check of one option
		return "", false
	}
	v, ok := statedValue(s)
	if b, bold := boldValue(s, segs); ok && bold {
		return b, true // "There are **4** primes less than 10."
	}
	return v, ok
}

// boldValue returns the value a sentence sets in bold, when it bolds exactly one value (with
// its unit) and no word of it hedges, denies or supposes: the writer marked the answer.
func boldValue(s string, segs []segment) (string, bool) {
	i := strings.Index(s, "**")
	if i < 0 {
		return "", false
	}
	j := strings.Index(s[i+2:], "**")
	if j < 0 || strings.Contains(s[i+2+j+2:], "**") {
		return "", false
	}
	for _, sg := range segs {
		if sg.kind == segWord && isHedge(sg.text) {
			return "", false
		}
	}
	var store [8]segment
	inner := segments(store[:0], s[i+2:i+2+j])
	if len(inner) == 0 || !isValueSeg(inner[0]) {
		return "", false
	}
	for _, sg := range inner[1:] {
		if sg.kind != segWord {
			return "", false
		}
	}
	v := valueText(inner[0])
	return v, v != ""
}

// unfinishedEnd reports a text (ending as te says) whose final sentence runs to its end and
// visibly stops mid-way: inside a math span or a bracket, on a word that needs what follows or
// on clause punctuation, or after its value with more begun than finished ([unfinishedTail]).
func unfinishedEnd(te textEnd) bool {
	if te.openAt >= 0 {
		return true
	}
	s := te.sentence
	if s == "" || len(s) > maxSentenceLen || !te.atEnd {
		return false
	}
	if r, _ := utf8.DecodeLastRuneInString(s); strings.ContainsRune(",;:，；：", r) {
		return true
	}
	var store [32]segment
	segs := segments(store[:0], s)
	return danglingEnd(segs, true) || bracketsOpen(s) || unfinishedTail(segs)
}

// stopsOnWord reports a text (ending as te says) whose final sentence runs to its end and
// ends on a word, with no full stop: "... whether the 6 red".
func stopsOnWord(te textEnd) bool {
	if te.sentence == "" || len(te.sentence) > maxSentenceLen || !te.atEnd {
		return false
	}
	var store [32]segment
	segs := segments(store[:0], te.sentence)
	return len(segs) > 0 && segs[len(segs)-1].kind == segWord
}

// finalSentence returns the last sentence of text that is not a sign-off, where it ends in
// text, whether the text has more than one sentence, and where the math span the text ends in
// opens (-1 when it ends outside math). Sentences end at ". ", "! ", "? ", "。", "！", "？",
// "।" and line breaks, outside math.
func finalSentence(text string) (sentence string, end int, several bool, openAt int) {
	var spans [keptSentences][2]int
	n := 0
	add := func(a, b int) {
		if strings.TrimSpace(text[a:b]) == "" {
			return
		}
		spans[n%keptSentences] = [2]int{a, b}
		n++
	}
	start := 0
	display, inline, opened := "", false, -1
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case display != "":
			if strings.HasPrefix(text[i:], display) {
				i += len(display) - 1
				display = ""
			}
		case c == '\\' && i+1 < len(text):
			switch text[i+1] {
			case '[':
				display, opened = `\]`, i
			case '(':
				inline, opened = true, i
			case ')':
				inline = false
			}
			i++
		case c == '$':
			if strings.HasPrefix(text[i:], "$$") {
				display, opened = "$$", i
				i++
			} else if inline || !moneySign(text, i) {
				inline = !inline
				if inline {
					opened = i
				}
			}
		case c == '\n':
			inline = false
			add(start, i)
			start = i + 1
		case inline:
		case (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' || text[i+1] == '\r'):
			add(start, i)
			start = i + 1
		case c >= utf8.RuneSelf:
			for _, e := range [...]string{"。", "！", "？", "।"} {
				if strings.HasPrefix(text[i:], e) {
					add(start, i)
					start = i + len(e)
					i += len(e) - 1
					break
				}
			}
		}
	}
	add(start, len(text))
	openAt = -1
	if display != "" || inline {
		openAt = opened
	}
	for k := n - 1; k >= 0 && k >= n-keptSentences; k-- {
		sp := spans[k%keptSentences]
		if s := text[sp[0]:sp[1]]; !signOff(s) {
			return s, sp[1], n > 1, openAt
		}
	}
	return "", len(text), false, openAt
}

// moneySign reports a "$" that is a currency sign, with no other "$" later on its line:
// before a number ("$15", "R$ 50", "US$ 3") on a line with no LaTeX command ("$12 \times 3"
// is math), or right after a number ("7 $", "1 500$").
func moneySign(text string, i int) bool {
	line := text[i+1:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	if strings.Contains(line, "$") {
		return false
	}
	if i+1 < len(text) && isDigit(text[i+1]) || currencyPrefix(text[:i]) && startsDigit(strings.TrimLeft(line, " ")) {
		return !hasCommand(line)
	}
	before := strings.TrimRight(text[:i], " ")
	return before != "" && isDigit(before[len(before)-1])
}

// currencyPrefix reports capitals that name a dollar at the end of s: R$, US$, C$, HK$.
func currencyPrefix(s string) bool {
	n := 0
	for n < len(s) && n < 4 && s[len(s)-1-n] >= 'A' && s[len(s)-1-n] <= 'Z' {
		n++
	}
	return n >= 1 && n <= 3 && (n == len(s) || !isLetter(s[len(s)-1-n]))
}

func startsDigit(s string) bool { return s != "" && isDigit(s[0]) }

// hasCommand reports a LaTeX command (a backslash before a letter) in s.
func hasCommand(s string) bool {
	for k := 0; k+1 < len(s); k++ {
		if s[k] == '\\' && isLetter(s[k+1]) {
			return true
		}
	}
	return false
}

// planSentence reports a sentence that opens with a plan: "Let us check ...: 4 and 5".
func planSentence(segs []segment) bool {
	var words []string
	for _, sg := range segs {
		if sg.kind != segWord {
			break
		}
		words = append(words, sg.text)
	}
	return len(words) > 0 && isPlan(words)
}

// incomplete reports "and so on", "and so forth": the clause lists examples.
func incomplete(words []string) bool {
	for k := 1; k < len(words); k++ {
		if strings.EqualFold(words[k-1], "so") && (strings.EqualFold(words[k], "on") || strings.EqualFold(words[k], "forth")) {
			return true
		}
	}
	return false
}

// countWords counts words of two or more letters in text, stopping at limit.
func countWords(text string, limit int) int {
	n, run := 0, 0
	for _, r := range text {
		if isWordRune(r) {
			run++
			if run == 2 || r >= utf8.RuneSelf && run == 1 {
				n++
				if n >= limit {
					return n
				}
			}
			continue
		}
		run = 0
	}
	return n
}

func sentenceWords(segs []segment) []string {
	var words []string
	for _, sg := range segs {
		if sg.kind == segWord {
			words = append(words, sg.text)
		}
	}
	return words
}

func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if !isLetter(w[i]) {
			return false
		}
	}
	return true
}

// metaNoun names parts of the solution rather than the quantity asked for: "2 cases",
// "3 steps".
func metaNoun(w string) bool {
	switch strings.ToLower(w) {
	case "case", "cases", "subcase", "subcases", "step", "steps", "part", "parts", "stage", "stages",
		"scenario", "scenarios", "method", "methods", "approach", "approaches", "condition", "conditions",
		"equation", "equations", "lemma", "lemmas", "claim", "claims":
		return true
	}
	return false
}

// conditionalAt reports whether a clause starting at segs[start] is the consequence of a
// condition ("If the side were 2, the perimeter would be 6"): an "if" earlier in the sentence
// that no "but", "so" or "therefore" has closed.
func conditionalAt(segs []segment, start int) bool {
	cond := false
	for _, sg := range segs[:start] {
		if sg.kind != segWord {
			continue
		}
		switch strings.ToLower(sg.text) {
		case "if", "suppose", "supposing", "assume", "assuming", "unless", "si", "wenn", "falls", "إذا", "अगर", "यदि":
			cond = true
		case "but", "however", "so", "thus", "therefore", "hence", "since", "mais", "pero", "aber", "donc", "但", "但是", "所以", "因此":
			cond = false
		default:
			if r, _ := utf8.DecodeRuneInString(sg.text); isHan(r) && (strings.Contains(sg.text, "如果") || strings.Contains(sg.text, "假设")) {
				cond = true
			}
		}
	}
	return cond
}

// procedural reports a clause that describes a step ("Then we divide by 3") rather than a
// result: "we" or "I" and a verb of calculation, with no verb of result ("to get", "gives") and
// no worked equation ("we divide 6 by 3 = 2"; "we set x = 5" is still a step).
func procedural(clause []segment, words []string) bool {
	step := false
	for k := 0; k+1 < len(words); k++ {
		if w := strings.ToLower(words[k]); w == "we" || w == "i" {
			switch strings.ToLower(words[k+1]) {
			case "divide", "multiply", "add", "subtract", "compute", "calculate", "substitute", "plug", "apply",
				"use", "simplify", "solve", "factor", "expand", "rewrite", "set", "take", "consider", "check",
				"verify", "try", "start", "begin", "note", "recall", "square", "differentiate", "integrate",
				"combine", "move", "isolate", "write", "denote", "define", "round", "convert":
				step = true
			}
		}
	}
	if !step {
		return false
	}
	for _, w := range words {
		switch strings.ToLower(w) {
		case "get", "gets", "got", "gives", "give", "yields", "obtain", "obtains", "find", "is", "are", "equals", "makes", "have", "has":
			return false
		}
	}
	for _, sg := range clause {
		if lhs, _, ok := strings.Cut(sg.text, "="); ok && sg.kind != segWord && strings.ContainsAny(lhs, "0123456789") {
			return false
		}
	}
	return true
}
