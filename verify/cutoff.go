package verify

import (
	"strings"
	"unicode/utf8"
)

// This file holds what tells that a text stops mid-solution, and the readings of the end of
// a text that go with it. Whether a text was cut off is a fact when the finish reason is known
// (see [Options]); without it, only a text that stops inside an unclosed structure counts as
// cut off: an unclosed math span or box, a <think> never left, or a text that says it goes on
// ("[continued]"). A final sentence that ends on a word that needs what follows ("and", "the",
// "is", "所以") states no value, whatever the finish reason. The file also reads a choice letter
// that opens a solution ("B. Option A overlooks ...").

// unclosedThink reports a text whose last <think> is never closed and has no <answer> tag
// after it: the text never left its reasoning. An answer tag after an unclosed <think> ends
// the reasoning (the model forgot "</think>" and answered in the rollout format).
func unclosedThink(text string) bool {
	i := lastIndex(text, "<think>")
	return i >= 0 && !strings.Contains(text[i:], "</think>") && indexFold(text[i:], "<answer>") < 0
}

// mathOpenAtEnd reports a text that stops inside a math span: $...$ or \(...\) on its last
// line, $$...$$ or \[...\] anywhere (a "$" next to a number, with no other "$" on its line,
// is money).
func mathOpenAtEnd(text string) bool {
	if !strings.ContainsAny(text, `$\`) {
		return false
	}
	_, _, _, open := finalSentence(text)
	return open
}

// saysContinued reports a text that ends by saying it goes on: "[continued]", "(truncated)".
func saysContinued(text string) bool {
	t := strings.TrimRight(text, " \t\r\n.")
	if t == "" || t[len(t)-1] != ']' && t[len(t)-1] != ')' {
		return false
	}
	open := strings.LastIndexAny(t, "[(")
	if open < 0 {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(t[open+1 : len(t)-1])) {
	case "continued", "to be continued", "truncated", "cont", "cont.", "output truncated":
		return true
	}
	return false
}

// opensMath reports whether s starts a math span ($, $$, \[, \() that is never closed.
func opensMath(s string) bool {
	if !(strings.HasPrefix(s, "$") || strings.HasPrefix(s, `\[`) || strings.HasPrefix(s, `\(`)) {
		return false
	}
	if strings.HasPrefix(s, "$") && moneySign(s, 0) {
		return false
	}
	_, _, ok := leadingMath(s)
	return !ok
}

// danglingEnd reports a final sentence whose last word needs what follows it: a conjunction,
// an article, a preposition, a copula or a conclusion word ("..., and", "the area of the",
// "so each group gets", "所以"), or whose last math ends on an operator ("12 +", "x ="). Such
// a sentence states no value, however the text ended.
func danglingEnd(segs []segment) bool {
	if len(segs) == 0 {
		return false
	}
	last := segs[len(segs)-1]
	switch last.kind {
	case segWord:
		return danglingWord(last.text)
	case segPlain:
		t := strings.TrimSpace(last.text)
		for _, op := range [...]string{"+", "-", "*", "/", "=", "×", "÷", "·", "−", `\times`, `\cdot`, `\div`} {
			if strings.HasSuffix(t, op) {
				return true
			}
		}
	}
	return false
}

// danglingWord reports words no sentence ends on when it is complete.
func danglingWord(w string) bool {
	if r, _ := utf8.DecodeRuneInString(w); isHan(r) {
		for _, e := range [...]string{"所以", "因此", "于是", "然后", "等于", "是", "为", "和", "与", "的"} {
			if strings.HasSuffix(w, e) {
				return true
			}
		}
		return false
	}
	switch strings.ToLower(w) {
	case "and", "or", "but", "nor", "the", "an", "of", "to", "by", "with", "than", "from", "into", "as", "is",
		"are", "was", "were", "equals", "gives", "makes", "yields", "gets", "get", "obtain", "then", "so", "thus",
		"therefore", "hence", "because", "since", "whose", "plus", "minus", "between", "its", "their", "our", "his",
		"my", "your",
		"et", "ou", "de", "du", "des", "le", "la", "les", "une", "est", "sont", "vaut", "donc", "puis", "que",
		"avec", "par", "und", "oder", "der", "die", "das", "den", "dem", "ein", "eine", "ist", "sind", "mit",
		"von", "dann", "daher", "dass", "y", "el", "los", "las", "una", "del", "es", "son", "con", "para",
		"entonces", "и", "а", "но", "в", "с", "на", "к", "по", "равно", "равна", "равен", "составляет",
		"значит", "поэтому":
		return true
	}
	return false
}

// dropCalculatorNotes removes the calculator annotations of GSM8K solutions: "48+24 =
// <<48+24=72>>72" reads "48+24 = 72".
func dropCalculatorNotes(text string) string {
	if !strings.Contains(text, "<<") {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(text, "<<")
		if i < 0 {
			break
		}
		j := strings.Index(text[i+2:], ">>")
		if j < 0 || strings.ContainsAny(text[i+2:i+2+j], "\n<") || !strings.Contains(text[i+2:i+2+j], "=") {
			break // not a note: keep the rest as it is
		}
		j += 2
		b.WriteString(text[:i])
		text = text[i+j+2:]
	}
	b.WriteString(text)
	return b.String()
}

// copulaWord reports words that state a value: "is", "equals", "равно", "vaut", "是".
func copulaWord(w string) bool {
	switch strings.ToLower(w) {
	case "is", "are", "was", "were", "equals", "equal", "be", "becomes", "gives", "give", "makes", "yields",
		"leaves", "leaving", "totals",
		"get", "gets", "obtain", "est", "vaut", "es", "ist", "beträgt", "é", "è", "равно", "равна", "равен",
		"составляет", "是", "为", "為", "等于", "は":
		return true
	}
	return false
}

// conclusionWord reports words that say a sentence states the result: "so", "therefore",
// "total", "answer" and their like in other languages.
func conclusionWord(w string) bool {
	switch strings.ToLower(w) {
	case "so", "thus", "therefore", "hence", "consequently", "ultimately", "total", "totals", "altogether",
		"summing", "summary", "conclusion", "conclude", "together",
		"overall", "answer", "result", "final", "finally", "donc", "ainsi", "résultat", "entonces", "resultado",
		"portanto", "logo", "então", "daher", "somit", "insgesamt", "ergebnis", "итак", "поэтому", "значит",
		"следовательно", "итого", "ответ", "इसलिए", "अतः", "उत्तर", "إذن", "لذلك", "ดังนั้น", "따라서", "그러므로",
		"vậy", "jadi", "dolayısıyla", "yani", "zatem", "więc", "stąd", "dus", "daarom", "quindi", "dunque", "tanto",
		"assim", "así", "образом", "cevap", "jawabannya", "odpowiedź", "đáp":
		return true
	}
	if r, _ := utf8.DecodeRuneInString(w); r >= 0x0E00 && r <= 0x0EFF {
		// Thai and Lao write without spaces: "ดังนั้นราคาทั้งหมดคือ"
		return strings.Contains(w, "ดังนั้น") || strings.Contains(w, "คำตอบ") || strings.Contains(w, "ทั้งหมด")
	}
	if r, _ := utf8.DecodeRuneInString(w); isHan(r) {
		for _, c := range [...]string{"所以", "因此", "综上", "總共", "总共", "一共", "答", "故", "したがって", "よって", "つまり"} {
			if strings.Contains(w, c) {
				return true
			}
		}
	}
	return false
}

// leadLetter reads a choice letter that opens a solution and is followed by its reason: "B"
// or "(B)" or "**B**" alone on the first line with more lines after it, or "B." "B)" "B:" "B,"
// "(B)" before a sentence ("B. Option A overlooks the overlap."). A list of options ("A. 12⏎B.
// 15"), a heading ("I. Setup") or a bare "B. 42" is not such an answer.
func leadLetter(text string) (string, bool) {
	t := strings.TrimLeft(text, " \t\r\n")
	line, after := t, ""
	if nl := strings.IndexByte(t, '\n'); nl >= 0 {
		line, after = t[:nl], t[nl+1:]
	}
	l := strings.TrimLeft(line, "*_#> ")
	for _, w := range [...]string{"Option ", "option ", "Choice ", "choice "} {
		l = strings.TrimPrefix(l, w) // "Option B. Option A would require ..."
	}
	wrapped := strings.HasPrefix(l, "(")
	if wrapped {
		l = l[1:]
	}
	if l == "" || l[0] < 'A' || l[0] > 'J' {
		return "", false
	}
	c, rest := l[0], l[1:]
	if wrapped {
		if !strings.HasPrefix(rest, ")") {
			return "", false
		}
		rest = rest[1:]
	}
	rest = strings.TrimLeft(rest, "*_")
	switch {
	case strings.TrimSpace(rest) == "":
		if strings.TrimSpace(after) == "" {
			return "", false // a bare letter is the answer as it is
		}
	case wrapped && (rest[0] == ' ' || strings.IndexByte(".,:", rest[0]) >= 0) ||
		!wrapped && c != 'I' && strings.IndexByte(".):,", rest[0]) >= 0 && len(rest) > 1 && rest[1] == ' ':
		reason := strings.TrimLeft(rest, ".):, ")
		words := len(strings.Fields(reason))
		if !(isProse(reason) && words >= 4 || strings.Contains(reason, ". ") && words >= 6) {
			return "", false // "B. 42", "C) Paris": a letter with its option's text
		}
	default:
		return "", false
	}
	if optionList(after) {
		return "", false
	}
	return string(c), true
}

// optionList reports whether a line of text starts with an option label: "B. 15", "(C) 18".
func optionList(text string) bool {
	for text != "" {
		line := text
		if nl := strings.IndexByte(text, '\n'); nl >= 0 {
			line, text = text[:nl], text[nl+1:]
		} else {
			text = ""
		}
		l := strings.TrimLeft(line, " \t*_#>")
		l = strings.TrimPrefix(l, "(")
		if len(l) >= 3 && l[0] >= 'A' && l[0] <= 'J' && (l[1] == '.' || l[1] == ')' || l[1] == ':') && l[2] == ' ' {
			return true
		}
	}
	return false
}

// opensStep reports a final sentence that opens a step of the solution ("First, ...", "Next,
// ...", "Now, ...", "So far, ...") or second thoughts ("Wait, ...", "Hmm, ..."): the text
// stopped on the way, whatever value the sentence meets.
func opensStep(s string) bool {
	w := strings.ToLower(strings.TrimLeft(s, " *_#>-"))
	for _, p := range [...]string{"first,", "first ", "firstly", "next,", "next ", "now,", "now ", "initially", "second,",
		"secondly", "to begin", "let's start", "we start", "so far", "at this point", "up to now", "for now", "wait",
		"hmm", "hold on", "首先", "第一步", "d'abord", "primero", "zuerst", "сначала"} {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}
