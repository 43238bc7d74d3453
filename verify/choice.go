package verify

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// goldChoice recognises a multiple-choice gold answer: A, (A), A), A., and a letter with its
// option's text: "(C) 15", "C) Paris", "C. Paris", "C: Paris", "C Paris". It returns the letter
// and the option's text, if any.
func goldChoice(toks []token) (byte, []token, bool) {
	switch len(toks) {
	case 1:
		l, ok := choiceLetter(toks[0], false)
		return l, nil, ok
	case 2:
		if toks[1].kind == tOp && (toks[1].text == ")" || toks[1].text == ".") {
			l, ok := choiceLetter(toks[0], true)
			return l, nil, ok
		}
	case 3:
		if isOpTok(toks[0], "(") && isOpTok(toks[2], ")") {
			l, ok := choiceLetter(toks[1], true)
			return l, nil, ok
		}
	}
	if len(toks) > 3 && isOpTok(toks[0], "(") && isOpTok(toks[2], ")") {
		l, ok := choiceLetter(toks[1], false)
		return l, toks[3:], ok
	}
	if len(toks) > 2 && toks[1].kind == tOp && (toks[1].text == ")" || toks[1].text == "." || toks[1].text == ":") {
		l, ok := choiceLetter(toks[0], false)
		return l, toks[2:], ok
	}
	if len(toks) > 1 && toks[1].space && optionStart(toks[1]) {
		l, ok := choiceLetter(toks[0], false)
		return l, toks[1:], ok
	}
	return 0, nil, false
}

// optionStart reports whether t can open an option's text after a bare letter ("C Paris",
// "C 15"), unlike an article followed by a common word ("A cube").
func optionStart(t token) bool {
	switch t.kind {
	case tNum:
		return true
	case tWord:
		r, _ := utf8.DecodeRuneInString(t.text)
		return unicode.IsUpper(r) || r >= utf8.RuneSelf
	}
	return false
}

func isOpTok(t token, s string) bool { return t.kind == tOp && t.text == s }

func choiceLetter(t token, wrapped bool) (byte, bool) {
	if t.kind != tIdent || len(t.text) != 1 {
		return 0, false
	}
	c := t.text[0]
	if c >= 'A' && c <= 'J' {
		return c, true
	}
	if wrapped && c >= 'a' && c <= 'j' {
		return c - 32, true
	}
	return 0, false
}

// A choice token is a word, a single letter, or one punctuation character of a prediction.
type ctok struct {
	text   string
	letter bool // a lone ASCII letter
	spaced bool // a space or dropped markup came before it
}

// choiceTokens splits a prediction into words and punctuation, with LaTeX commands, braces
// and dollar signs dropped (\textbf{(B)} reads as (B)). Han text and Latin letters are
// separate words (答案是B).
func choiceTokens(s string) []ctok {
	var out []ctok
	spaced := true
	add := func(text string) {
		out = append(out, ctok{text: text, letter: len(text) == 1 && isLetter(text[0]), spaced: spaced})
		spaced = false
	}
	for i := 0; i < len(s) && len(out) < 256; {
		r, sz := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\':
			j := i + 1
			for j < len(s) && isLetter(s[j]) {
				j++
			}
			if j == i+1 {
				j++
			} else if !choiceWrapper(s[i+1 : j]) {
				add("*") // \sqrt{C}, \frac{C}{2}, C \times 2, \angle C: math on the letter
			}
			i, spaced = j, true
		case r == '{' || r == '}' || r == '$' || r == '*' || unicode.IsSpace(r):
			i, spaced = i+sz, true
		case isWordRune(r) || r == '\'' || r == '’':
			j := i
			han := isHan(r)
			for j < len(s) {
				q, qs := utf8.DecodeRuneInString(s[j:])
				if !(isWordRune(q) || q == '\'' || q == '’') || isHan(q) != han {
					break
				}
				j += qs
			}
			add(s[i:j])
			i = j
		default:
			add(s[i : i+sz])
			i += sz
		}
	}
	return out
}

// choiceWrapper reports LaTeX commands that only dress a choice letter: text and font
// wrappers, boxes, spacing and sizing (\textbf{(B)}, \boxed{C}, \mathrm{C}, \quad).
func choiceWrapper(name string) bool {
	switch name {
	case "boxed", "fbox", "framebox", "bf", "it", "rm", "bfseries", "underline", "color", "textcolor", "colorbox", "textcircled":
		return true
	}
	return isTextCmd(name) || isFontCmd(name) || isSpacingCmd(name) || isSizingCmd(name)
}

// failsVerb reports verbs that reject the letter before them: "A fails", "B overlooks".
func failsVerb(w string) bool {
	switch w {
	case "fails", "fail", "failed", "violates", "overlooks", "ignores", "misses", "omits", "neglects", "overcounts",
		"undercounts", "contradicts", "doesn’t", "can’t":
		return true
	}
	return false
}

// isPostNegation reports words that deny the letter before them in languages that put the
// negation after what it denies: "Aではなく", "A가 아니라", "A नहीं", "A değil".
func isPostNegation(w string) bool {
	switch strings.ToLower(w) {
	case "नहीं", "değil", "degil":
		return true
	}
	for _, n := range [...]string{"ではな", "じゃな", "ではありません", "아니", "않", "틀리", "違", "誤"} {
		if strings.Contains(w, n) {
			return true
		}
	}
	return false
}

func isNegation(w string) bool {
	switch strings.ToLower(w) {
	case "not", "no", "never", "neither", "nor", "isn't", "isn’t", "aren't", "wasn't", "can't", "can’t",
		"cannot", "couldn't", "won't", "don't", "doesn't", "non", "pas", "n'est", "nicht", "kein", "keine",
		"except", "excluding", "instead", "rather", "wrong", "incorrect", "false", "invalid", "impossible",
		"eliminated", "eliminate", "excluded", "exclude", "rule", "ruled", "faux", "fausse", "incorrecte",
		"incorrecta", "incorrecto", "falsch", "maybe", "perhaps", "possibly", "might", "could", "if",
		"peut-être", "quizás", "quizá", "vielleicht", "si", "unless", "nicht.", "niet", "не", "неверно",
		"não", "nao", "nein", "nie", "ні", "ليس", "không", "inte", "ikke", "nem", "errada", "errado", "falso", "falsa",
		"sbagliata", "sbagliato", "неправильно", "неверный", "incorrectas", "incorrectos", "incorrectes", "fausses",
		"faux.", "falsos", "falsas", "erradas", "errados", "sbagliate", "sbagliati", "falsche", "distractor", "distractors":
		return true
	}
	if r, _ := utf8.DecodeRuneInString(w); isHan(r) {
		for _, n := range [...]string{"不", "非", "错", "误", "没", "排除", "可能", "也许", "如果"} {
			if strings.Contains(w, n) {
				return true
			}
		}
	}
	return false
}

func isExplanation(w string) bool {
	switch strings.ToLower(w) {
	case "because", "since", "as", "car", "porque", "puisque", "weil", "da", "denn", "because,", "ya", "pues", "pois",
		"perché", "poiché", "omdat", "потому", "так", "çünkü", "karena", "vì":
		return true
	}
	r, _ := utf8.DecodeRuneInString(w)
	return isHan(r) && (strings.Contains(w, "因为") || strings.Contains(w, "由于"))
}

// clauseEnd reports punctuation and words that end a clause: a comma, "but", a sentence end.
func clauseEnd(w string) (clause, sentence bool) {
	switch w {
	case ".", ";", "!", "?", "。", "；", "！", "？", "\n":
		return true, true
	case ",", "，", "、", ":", "：", "—":
		return true, false
	}
	switch strings.ToLower(w) {
	case "but", "mais", "pero", "sino", "aber", "however", "但", "但是", "而", "而是", "所以", "so", "thus", "hence", "therefore",
		"mas", "ma", "но", "maar", "ale", "sondern", "bensì":
		return true, false
	}
	return false, false
}

// letterVerbs may follow a choice letter written as a bare capital A or I, which otherwise
// reads as the article or the pronoun ("A number is ...", "I think ...").
func letterVerb(w string) bool {
	switch w {
	case "is", "was", "and", "or", "seems", "would", "fits", "matches", "gives", "satisfies", "must",
		"should", "can", "only", "also", "remains", "holds", "works", "because", "since", "as", "with", "et", "y",
		"est", "es", "ist":
		return true
	}
	return false
}

// choiceAt reports whether toks[i] names a choice letter, and which.
func choiceAt(toks []ctok, i int) (byte, bool) {
	t := toks[i]
	if !t.letter {
		return 0, false
	}
	c := t.text[0]
	prev, next := "", ""
	if i > 0 {
		prev = toks[i-1].text
	}
	if i+1 < len(toks) {
		next = toks[i+1].text
	}
	lowerOK := c >= 'a' && c <= 'j'
	upperOK := c >= 'A' && c <= 'J'
	if prev != "" && (strings.ContainsAny(prev[len(prev)-1:], "0123456789%") || prev == "°" || prev == "º") {
		return 0, false // 30°C, 1.5E3
	}
	if prev == "(" && !toks[i-1].spaced && i >= 2 && functionName(toks[i-2].text) {
		return 0, false // P(A), f(b), Var(X)
	}
	if (prev == "(" || prev == "[") && (next == ")" || next == "]") {
		if mathAround(toks, i-1, i+1) {
			return 0, false // 2(C), (C)^2: a factor, not a choice
		}
		if lowerOK {
			return c - 32, true
		}
		return c, upperOK
	}
	if strings.Contains("=+-*/^_<>|'", prev) && prev != "" || strings.Contains("=+-*/^_<>|'", next) && next != "" {
		return 0, false
	}
	if next == ")" && prev != "(" {
		if lowerOK {
			return c - 32, true
		}
		return c, upperOK
	}
	if !upperOK {
		return 0, false
	}
	if (c == 'A' || c == 'I') && i+1 < len(toks) {
		r, _ := utf8.DecodeRuneInString(next)
		if unicode.IsLower(r) && !letterVerb(next) {
			return 0, false // the article or the pronoun
		}
	}
	return c, true
}

// mathAround reports whether the bracket at toks[open] or toks[close] is glued to math: a
// number or a closing bracket before it, an operator after it.
func mathAround(toks []ctok, open, close int) bool {
	if open > 0 && !toks[open].spaced {
		p := toks[open-1].text
		if strings.ContainsAny(p[len(p)-1:], "0123456789)") {
			return true
		}
	}
	if close+1 < len(toks) && !toks[close+1].spaced {
		n := toks[close+1].text
		if strings.Contains("^*/_(", n) || n[0] >= '0' && n[0] <= '9' {
			return true
		}
	}
	return false
}

// negatedAfter reports whether the letter at i is denied by what follows it: "A is wrong",
// "A isn't", "A est fausse", "A 错误".
func negatedAfter(toks []ctok, i int) bool {
	copula := false
	for k, skipped, joined := i+1, 0, 0; k < len(toks) && skipped <= 2 && joined <= 12; k++ {
		w := strings.ToLower(toks[k].text)
		if isPostNegation(w) || failsVerb(w) {
			return true
		}
		if isNegation(w) {
			// After other letters a particle denies what follows it ("C, no A"), unless a
			// copula came first ("A and C are not correct").
			return joined == 0 || copula || !negationParticle(w)
		}
		switch w {
		case "is", "are", "was", "were", "est", "es", "ist", "also", "definitely", "clearly", "obviously", "也", "是",
			"option", "choice", "가", "이", "은", "는", "が", "は", "も", "です", "है", "both", "all", "each", "son", "sont",
			"sind", "sono", "são", "都", "均":
			skipped++
			copula = copula || w != "both" && w != "all" && w != "each"
			continue
		}
		// "A and C fail", "A, B y C son incorrectas": letters joined to a denied one share its denial.
		if !copula && (toks[k].letter || w == "and" || w == "," || w == "or" || w == "y" || w == "et" || w == "und" ||
			w == "e" || w == "、" || w == "，" || w == "和" || w == "&") {
			joined++ // "C है, A नहीं": after its copula a letter's clause is over
			continue
		}
		return false
	}
	return false
}

// negationParticle reports negations that deny what follows them: "no A", "nicht A", "不是A".
func negationParticle(w string) bool {
	switch w {
	case "not", "no", "never", "neither", "nor", "non", "pas", "nicht", "kein", "keine", "niet", "не", "não", "nao",
		"nie", "ні", "ليس", "không", "except", "excluding", "instead", "rather", "if", "si", "maybe", "perhaps":
		return true
	}
	r, _ := utf8.DecodeRuneInString(w)
	return isHan(r) && (strings.HasPrefix(w, "不") || strings.HasPrefix(w, "非"))
}

// affirmedAfter reports whether the letter at i is declared the answer by what follows it:
// "B is correct", "B is the correct answer", "D es la correcta", "B 正确".
func affirmedAfter(toks []ctok, i int) bool {
	for k, skipped := i+1, 0; k < len(toks) && skipped <= 3; k++ {
		switch strings.ToLower(toks[k].text) {
		case "correct", "right", "true", "correcta", "correcto", "correcte", "bonne", "richtig", "corretta", "correta",
			"正确", "正確", "是正确的", "对", "正解", "정답":
			return true
		case "is", "was", "the", "definitely", "clearly", "indeed", "answer", "option", "choice", "es", "la", "est",
			"ist", "è", "é", "a", "是", "이", "가", "です", "は", ")", "]":
			skipped++
			continue
		}
		return false
	}
	return false
}

// predChoice finds the choice letters a prediction asserts: letters after a negation or a hedge
// in the same clause ("not A", "maybe B", "la réponse est C et non A"), letters denied by what
// follows them ("A is wrong", "A and C fail"), letters inside an explanation ("because B ...")
// and inside a parenthetical remark ("D (A and B ignore friction)") do not count. One letter
// declared correct ("B is the correct answer") is the answer whatever other letters are named.
// It returns the letter and how many distinct letters are asserted.
func predChoice(s string) (byte, int) {
	toks := choiceTokens(s)
	var letter, sure byte
	count, sureCount := 0, 0
	negated, explaining := false, false
	remark := 0 // depth of parenthetical remarks: "D (A and B ignore friction)"
	for i, t := range toks {
		switch {
		case t.text == "(" && !(i+2 < len(toks) && toks[i+1].letter && toks[i+2].text == ")"):
			remark++
			continue
		case t.text == ")" && remark > 0 && !(i >= 2 && toks[i-1].letter && toks[i-2].text == "("):
			remark--
			continue
		}
		if clause, sentence := clauseEnd(t.text); clause {
			negated = false
			if sentence {
				explaining = false
			}
			continue
		}
		if isNegation(t.text) {
			negated = true
			continue
		}
		if isExplanation(t.text) {
			explaining = true
			continue
		}
		l, ok := choiceAt(toks, i)
		if !ok || negated || remark > 0 || negatedAfter(toks, i) {
			continue
		}
		if affirmedAfter(toks, i) && (sureCount == 0 || l != sure) {
			sure = l
			sureCount++
		}
		if explaining {
			continue
		}
		if count == 0 || l != letter {
			count++
		}
		letter = l
	}
	if sureCount == 1 {
		return sure, 1 // "**B** is the correct answer. A is a distractor."
	}
	return letter, count
}

// isText reports whether an answer is words only (a name, "yes", "no solution").
func isText(toks []token) bool {
	word := false
	for _, t := range toks {
		switch t.kind {
		case tWord:
			if !isSepWord(t) {
				word = true
			}
		case tIdent:
		case tOp:
			switch t.text {
			case "(", ")", ",", ".", ":", ";", "!", "?", "'", "-":
			default:
				return false
			}
		default:
			return false
		}
	}
	return word
}

func textKey(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		if t.kind == tWord || t.kind == tIdent {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.ToLower(t.text))
		}
	}
	return b.String()
}

// functionName reports a word that, written right before "(", applies a function to a letter
// rather than opening a choice: P(A), f(b), Var(X), sin(B). Other words ("Option(D)", "选(C)")
// do not.
func functionName(w string) bool {
	if len(w) == 1 {
		return isLetter(w[0])
	}
	switch w {
	case "Pr", "Var", "Cov", "sin", "cos", "tan", "log", "ln", "exp", "det":
		return true
	}
	return false
}
