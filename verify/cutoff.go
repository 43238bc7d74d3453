package verify

import (
	"strings"
	"unicode/utf8"
)

// This file holds the rules that keep extraction from guessing in a text that stops
// mid-solution (a rollout cut off by its token limit, a truncated log): an unclosed <think>, an
// unclosed math span after a marker or in the final sentence, and a final sentence that ends
// without its full stop unless it concludes on its value. It also reads a choice letter that
// opens a solution ("B. Option A overlooks ...").

// unclosedThink reports a text whose last <think> is never closed: the model was still
// reasoning when the text ended.
func unclosedThink(text string) bool {
	i := lastIndex(text, "<think>")
	return i >= 0 && !strings.Contains(text[i:], "</think>")
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

// cutOffSentence reports whether the final sentence s, followed by rest in the text, may have
// been cut off, and then whether it still concludes on its value. A sentence span ends at its
// full stop or line break, so rest holds that mark and what follows; when rest holds nothing
// but white space the sentence ran to the end of the text without a full stop. Such a
// sentence concludes only when its value ends it (a unit word may follow: "3.5 千米", "24
// cm") and it says so: a conclusion word ("So the total is 12", "Total = 12", "因此...") or a
// copula right before the value ("The sum of the roots is 5") in a sentence that does not
// open a step ("First, the number of red marbles is 5").
func cutOffSentence(s, rest string) (cut, concludes bool) {
	if strings.TrimSpace(rest) != "" {
		return false, true
	}
	var store [32]segment
	segs := segments(store[:0], s)
	last := len(segs) - 1
	for k := 0; k < 3 && last >= 1 && segs[last].kind == segWord && tailWord(segs[last].text); k++ {
		last-- // "45 per day", "18 students in total"
	}
	unit := last >= 1 && segs[last].kind == segWord && unitWord(segs[last].text) && isValueSeg(segs[last-1])
	if unit {
		last-- // "3.5 千米", "45 pages"
	}
	if last < 0 || !isValueSeg(segs[last]) || last < len(segs)-1 && !unit && segs[len(segs)-1].kind != segWord {
		return true, false
	}
	if unfinished(segs, last) {
		return true, false
	}
	for k, sg := range segs {
		if sg.kind == segWord && conclusionWord(sg.text) && !(k+1 < len(segs) && strings.EqualFold(segs[k+1].text, "far")) {
			return true, true
		}
	}
	first := last // "The solutions are $x = 1$ and $x = 4$": the copula stands before the list
	for first >= 2 && isValueSeg(segs[first-2]) && (segs[first-1].kind == segPunct && segs[first-1].text == "," ||
		segs[first-1].kind == segWord && isConnector(segs[first-1].text)) {
		first -= 2
	}
	stated := first >= 1 && segs[first-1].kind == segWord && copulaWord(segs[first-1].text) ||
		segs[last].kind == segPlain && strings.HasPrefix(strings.TrimSpace(segs[last].text), "=") // "Area = 24"
	if stated && !stepStart(segs) {
		return true, true
	}
	return true, false
}

// unfinished reports a value that is still being written: "$6 + $2" or "12 + 5" without its
// result, "$12 + 5" whose closing "$" was cut off.
func unfinished(segs []segment, last int) bool {
	v := segs[last]
	if v.kind == segMath {
		return false // closed math was finished by its writer
	}
	t := strings.TrimSpace(v.text)
	if strings.Contains(t, "$") && strings.ContainsAny(t, "+-*/^=\\{") {
		return true
	}
	if !strings.Contains(t, "=") && strings.ContainsAny(strings.TrimLeft(t, "-−$"), "+-*/×÷·−") {
		return true
	}
	if last > 0 {
		p := strings.TrimSpace(segs[last-1].text)
		return strings.HasSuffix(p, "+") || strings.HasSuffix(p, "-") || strings.HasSuffix(p, "*") ||
			strings.HasSuffix(p, "/") || strings.HasSuffix(p, `\times`) || strings.HasSuffix(p, `\cdot`)
	}
	return false
}

// tailWord reports words that may close a stated value: "in total", "per day", "left".
func tailWord(w string) bool {
	switch strings.ToLower(w) {
	case "in", "total", "all", "altogether", "overall", "left", "remaining", "each", "per", "day", "week", "hour",
		"month", "year", "person", "now", "only":
		return true
	}
	return false
}

// unitWord reports a word that may follow a value at the end of a sentence as its unit or
// what it counts (千米, cm, pages), not a word that goes on with the sentence.
func unitWord(w string) bool {
	if r, _ := utf8.DecodeRuneInString(w); isHan(r) {
		return true
	}
	switch strings.ToLower(w) {
	case "and", "or", "the", "but", "for", "to", "of", "in", "is", "we", "so", "at", "on", "by", "if", "as", "a", "an",
		"it", "be", "are", "was", "not", "nor", "yet", "i", "you", "he", "she", "its", "his", "her", "our", "и", "а",
		"но", "в", "с", "на", "et", "ou", "de", "la", "le", "y", "o", "el", "und", "der", "die", "das":
		return false
	}
	return !tailWord(w) && !isHedge(w) && !isClauseWord(w) && !meaningWord(w)
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

// stepStart reports a sentence that opens a step of the solution rather than its end.
func stepStart(segs []segment) bool {
	for _, sg := range segs {
		if sg.kind != segWord {
			continue
		}
		switch strings.ToLower(sg.text) {
		case "first", "firstly", "next", "now", "step", "let", "let's", "to", "then", "second", "secondly", "initially":
			return true
		}
		return false
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
		if strings.HasPrefix(l, "(") {
			l = l[1:]
		}
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
