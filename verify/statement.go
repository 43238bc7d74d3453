package verify

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// wordMarkers announce the answer in languages with spaces between words; they are matched at
// word boundaries, ignoring ASCII case.
var wordMarkers = [...]string{
	"answer", "correct option", "correct choice", "réponse", "reponse", "respuesta", "resposta",
	"risposta", "antwort", "ответ", "Ответ", "ОТВЕТ", "svar", "cevap", "jawaban", "odpowiedź", "odpowiedz",
	"відповідь", "Відповідь", "đáp án", "Đáp án", "antwoord",
}

// scriptMarker announces the answer in a script without word spaces (or with its copula after
// the value): the marker, the connectors that may follow it, and whether a value may follow
// it directly ("उत्तर 12 है", "答案 12").
type scriptMarker struct {
	word       string
	connectors []string
	bare       bool
}

var scriptMarkers = [...]scriptMarker{
	{"答案", []string{"应该是", "應該是", "就是", "应为", "應為", "是", "为", "為", ":", "："}, true},
	{"答", []string{":", "："}, false},
	{"答え", []string{"は", ":", "："}, false},
	{"정답", []string{"은", "는", ":", "："}, false},
	{"답", []string{":", "："}, false},
	{"الإجابة", []string{"النهائية هي", "النهائية:", "النهائية", "هي", "هو", ":"}, true},
	{"الجواب", []string{"النهائي هو", "النهائي:", "النهائي", "هو", "هي", ":"}, true},
	{"उत्तर", []string{"है:", "है", ":", "="}, true},
	{"คำตอบ", []string{"คือ", "ได้แก่", ":", "="}, true},
}

// fromStatement finds the last explicit answer statement that starts at or after from and
// returns what it announces.
func fromStatement(text string, from int) (candidate, bool) {
	best, rest, found := lastStatementMarker(text, from)
	if i, a, ok := gsmMarker(text, from); ok && i > best {
		end := len(text)
		if nl := strings.IndexByte(text[i:], '\n'); nl >= 0 {
			end = i + nl
		}
		return candidate{pos: i, end: end, answer: a, method: ByStatement, ok: true}, true
	}
	if !found {
		return candidate{}, false
	}
	if opensMath(strings.TrimLeft(rest, " \t\r\n")) {
		return candidate{pos: best, method: ByStatement}, true // cut off inside the answer
	}
	a, n, ok := statementContent(rest)
	if !ok {
		return candidate{}, false
	}
	if bracketsOpen(a) {
		return candidate{pos: best, method: ByStatement}, true // "The answer is (3, 5": cut off inside it
	}
	return candidate{pos: best, end: len(text) - len(rest) + n, answer: a, method: ByStatement, ok: true}, true
}

// maxMarkerMisses bounds the marker words that are passed over because nothing announces an
// answer after them ("the answers", "To find the answer, ...").
const maxMarkerMisses = 256

// lastStatementMarker scans text backwards to from, once, for the last marker of any language that is
// followed by what announces an answer; it returns the marker's position and the text after
// the announcement.
func lastStatementMarker(text string, from int) (int, string, bool) {
	misses := 0
	for i := len(text) - 1; i >= from && misses < maxMarkerMisses; i-- {
		c := lower(text[i])
		if !markerStart(c) {
			continue
		}
		starts := &markersByFirstByte[c]
		for _, w := range starts.words {
			kw := wordMarkers[w]
			if !hasPrefixFold(text[i:], kw) {
				continue
			}
			k := i + len(kw)
			if (i > 0 && isLetter(text[i-1])) || (k < len(text) && isLetter(text[k])) {
				continue // answers, answered
			}
			if rest, ok := markerRest(text, i, k); ok {
				return i, rest, true
			}
			misses++
		}
		for _, sm := range starts.scripts {
			if m := scriptMarkers[sm]; strings.HasPrefix(text[i:], m.word) {
				if rest, ok := scriptMarkerRest(text[i+len(m.word):], m); ok {
					return i, rest, true
				}
				misses++
			}
		}
	}
	return -1, "", false
}

// markersByFirstByte lists, for each byte, the word and script markers that start with it, in
// their order in wordMarkers and scriptMarkers: lastStatementMarker tries only those at each
// byte instead of every marker (a megabyte of letters cost 31 marker comparisons a byte).
var markersByFirstByte = func() (t [256]struct{ words, scripts []uint8 }) {
	for i, kw := range wordMarkers {
		t[kw[0]].words = append(t[kw[0]].words, uint8(i))
	}
	for i, m := range scriptMarkers {
		t[m.word[0]].scripts = append(t[m.word[0]].scripts, uint8(i))
	}
	return t
}()

// markerStart reports the first bytes of the markers (ASCII letters in lower case).
func markerStart(c byte) bool {
	switch c {
	case 'a', 'c', 'r', 's', 'j', 'o', 0xC4, 0xD0, 0xE7, 0xEC, 0xEB, 0xD8, 0xE0:
		return true
	}
	return false
}

// scriptMarkerRest reads what follows a script marker: one of its connectors, or directly a
// value when the marker allows it.
func scriptMarkerRest(after string, m scriptMarker) (string, bool) {
	rest := strings.TrimLeft(after, " *\u3000")
	for _, c := range m.connectors {
		if r, ok := strings.CutPrefix(rest, c); ok {
			return strings.TrimLeft(r, " *:：\u3000"), true
		}
	}
	if m.bare && rest != "" && startsValue(rest) {
		return rest, true
	}
	return "", false
}

// startsValue reports whether s starts with a number, a sign or math.
func startsValue(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isDigit(byte(r)) && r < utf8.RuneSelf || strings.ContainsRune(`$\(-−`, r) || foldRune(r) != r && isDigit(byte(foldRune(r)))
}

// gsmMarker reads a GSM8K-style last line "#### 42", at or after from, when what follows is
// a plain number.
func gsmMarker(text string, from int) (int, string, bool) {
	i := lastIndex(text[from:], "####")
	if i >= 0 {
		i += from
	}
	if i < 0 || strings.TrimLeft(text[strings.LastIndexByte(text[:i], '\n')+1:i], " \t") != "" {
		return -1, "", false
	}
	line := text[i+4:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	a := cleanAnswer(strings.TrimLeft(line, "# "))
	if a == "" || strings.Trim(a, "0123456789.,-$\\ ") != "" || strings.Trim(a, ".,-$\\ ") == "" {
		return -1, "", false
	}
	return i, a, true
}

func skipMarks(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '*' || s[j] == '\t' || s[j] == '}' || s[j] == '_') {
		j++
	}
	return j
}

// copulas may follow an answer marker (after adjectives such as "final"): "the answer is",
// "la réponse est", "la respuesta es", "die Antwort ist".
var copulas = [...]string{
	"is", "would be", "should be", "will be", "must be", "equals", "est", "es", "é", "è", "ist", "lautet",
	"sera", "será", "serait", "sería", "sarebbe", "seria",
}

// skipAdjectives skips "final", "finale", "correcte" ... after a marker ("la réponse finale est").
func skipAdjectives(s string, j int) int {
	for {
		k := j
		for _, adj := range [...]string{"finale", "final", "correcte", "correcta", "correcto", "corretta", "correta"} {
			if hasPrefixFold(s[k:], adj) && (k+len(adj) == len(s) || !isLetter(s[k+len(adj)])) {
				k = skipMarks(s, k+len(adj))
				break
			}
		}
		if k == j {
			return j
		}
		j = k
	}
}

func markerRest(text string, i, k int) (string, bool) {
	j := skipMarks(text, k)
	if j >= len(text) {
		return "", false
	}
	switch {
	case text[j] == ':':
		return text[skipMarks(text, j+1):], true
	case strings.HasPrefix(text[j:], "："):
		return text[skipMarks(text, j+len("：")):], true
	case text[j] == '=':
		return text[j+1:], true
	case text[j] == '\n' || text[j] == '\r':
		if headingBefore(text, i) {
			return text[j:], true
		}
		return "", false
	case strings.HasPrefix(text[j:], `\[`) || strings.HasPrefix(text[j:], "$$") ||
		strings.HasPrefix(text[j:], `\(`) || text[j] == '$':
		// "Answer \[ 42 \]", "**Final answer** $42$"; inline math must end its line.
		if headingBefore(text, i) && (strings.HasPrefix(text[j:], `\[`) || strings.HasPrefix(text[j:], "$$") || mathEndsLine(text[j:])) {
			return text[j:], true
		}
		return "", false
	}
	j = skipAdjectives(text, j)
	for _, ph := range copulas {
		if hasPrefixFold(text[j:], ph) && (j+len(ph) == len(text) || !isLetter(text[j+len(ph)])) {
			m := skipMarks(text, j+len(ph))
			if m < len(text) && text[m] == ':' {
				m = skipMarks(text, m+1)
			}
			return text[m:], true
		}
	}
	// "The answer to this question is 12."
	if hasPrefixFold(text[j:], "to ") || hasPrefixFold(text[j:], "for ") {
		seg := text[j:min(len(text), j+80)]
		if nl := strings.IndexAny(seg, ".\n$"); nl >= 0 {
			seg = seg[:nl]
		}
		if p := strings.LastIndex(seg, " is "); p >= 0 {
			return text[j+p+len(" is "):], true
		}
	}
	return "", false
}

// headingBefore reports whether only markup and words such as "final" or "the" precede position
// i on its line.
func headingBefore(text string, i int) bool {
	start := strings.LastIndexByte(text[:i], '\n') + 1
	pre := strings.ToLower(text[start:i])
	for _, w := range strings.FieldsFunc(pre, func(r rune) bool { return strings.ContainsRune("*#_ \t>-:.,", r) }) {
		switch w {
		case "final", "the", "my", "our", "so", "thus", "hence", "therefore", "la", "el", "die", "a", "de":
		default:
			return false
		}
	}
	return true
}

func isStopWord(s string) bool {
	switch s {
	case "not", "to", "that", "which", "as", "following", "below", "above",
		"given", "obtained", "found", "unknown", "unclear", "clear", "simple", "straightforward",
		"we", "from", "because", "correct", "incorrect", "wrong", "therefore", "this",
		"these", "what", "how", "why", "when", "where", "it", "there",
		"then", "now", "let", "being", "still", "also", "actually", "probably",
		"likely", "same", "in", "if", "whether", "going", "based", "derived",
		"calculated", "computed", "compute", "check", "verify", "recall", "note", "see",
		"consider", "first", "is", "was", "will", "should", "seems", "must",
		"can", "cannot", "does", "doesn't", "only", "valid", "unique", "indeed", "consistent",
		"verified", "confirmed", "reasonable", "plausible", "above.", "shown", "boxed":
		return true
	}
	return false
}

// trailingCopulas end a statement in languages that put the verb last ("उत्तर 12 है").
var trailingCopulas = [...]string{"है", "हैं", "です", "である", "입니다", "이다", "이에요"}

// statementContent reads the answer a statement announces in rest (the text after its
// marker) and how much of rest the statement takes up: its math block or list, or its
// sentence.
func statementContent(rest string) (string, int, bool) {
	s := strings.TrimLeft(rest, " \t")
	if strings.HasPrefix(s, "\n") || strings.HasPrefix(s, "\r") {
		s = strings.TrimLeft(s, " \t\r\n")
	}
	skipped := len(rest) - len(s)
	if m, n, ok := leadingMath(s); ok {
		if more, left, ok := mathList(s[n:]); ok {
			return joinParts(append(more, cleanAnswer(m))), len(rest) - len(left), true
		}
		a := cleanAnswer(m)
		return a, skipped + n, a != ""
	}
	line := s
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	line = cutSentence(line)
	used := skipped + len(line)
	if cutOffList(cleanAnswer(line)) {
		return "", 0, false // "So the answer is 15 apples, and": the text stops in the statement
	}
	line = trimJoiner(cutExplanation(line))
	a := cleanAnswer(line)
	for _, c := range trailingCopulas {
		a = cleanAnswer(strings.TrimSuffix(a, c))
	}
	// "The largest $n$ is 34." announces 34; "小明一共有15个苹果" states 15.
	if isProse(a) {
		if v, ok := statedValue(a); ok {
			a = v
		}
	}
	a = chainResult(a)
	if !answerLike(a) || sentenceCutOff(a, strings.TrimSpace(rest[used:]) == "") {
		return "", 0, false
	}
	return a, used, true
}

// chainResult reads an announced computation as its result: "Ответ: (3 + 4) * 2 = 14 (см)" is
// 14 (см). Both sides must be free of symbols, so "x = 5" and "2x = 14" stay as they are.
func chainResult(a string) string {
	i := strings.IndexByte(a, '=')
	if i <= 0 || strings.ContainsAny(a, "<>") {
		return a
	}
	rhs := cleanAnswer(a[strings.LastIndexByte(a, '=')+1:])
	lhs := lex(a[:i], false)
	r := lex(rhs, false)
	if rhs == "" || lhs.bad || r.bad || !hasNumber(lhs.toks) || hasSymbols(lhs.toks) || hasSymbols(r.toks) || !hasNumber(r.toks) {
		return a
	}
	return rhs
}

// sentenceCutOff reports an announced answer that is a sentence stopping on a word that
// needs what follows: "答えは、1日目に12ページ、2日目に". A value with a few words cut off after
// it ("15 apples for the") is still the value. open tells that the statement runs to the end
// of its text with no full stop.
func sentenceCutOff(a string, open bool) bool {
	var store [32]segment
	segs := segments(store[:0], a)
	if len(segs) == 0 || !danglingEnd(segs, open) {
		return false
	}
	last := segs[len(segs)-1].text
	r, _ := utf8.DecodeRuneInString(last)
	return isProse(a) || isHan(r)
}

// mathList reads further math blocks joined to a first one: "$x=2$ and $y=3$". It returns
// them last to first, as joinParts wants them, the text after them, and ok=false when
// nothing joins.
func mathList(s string) ([]string, string, bool) {
	var out []string
	for len(out) < 8 {
		t := strings.TrimLeft(s, " \t")
		sep := false
		for _, c := range [...]string{",", ";", "and ", "or ", "et ", "y ", "和", "或"} {
			if r, ok := strings.CutPrefix(t, c); ok {
				t, sep = strings.TrimLeft(r, " \t"), true
				break
			}
		}
		if !sep {
			break
		}
		m, n, ok := leadingMath(t)
		if !ok || cleanAnswer(m) == "" {
			break
		}
		out = append([]string{cleanAnswer(m)}, out...)
		s = t[n:]
	}
	if len(out) == 0 {
		return nil, "", false
	}
	rest := strings.TrimSpace(s)
	if rest != "" && !strings.HasPrefix(rest, ".") && !strings.HasPrefix(rest, "。") && !strings.HasPrefix(rest, "\n") {
		return nil, "", false
	}
	return out, s, true
}

// cutExplanation drops a trailing justification: "5 because ...", "5 (since ...)".
func cutExplanation(line string) string {
	low := strings.ToLower(line)
	cut := len(line)
	for _, m := range [...]string{" i hope", " because", " since", ", which", ", as ", ", so ", ", not ", " not ", " et non ", " y no ", " e não ", " und nicht ", " rather than ", " instead of ", "，而不是", "，不是", "。不是", "而不是", "; ", " (since", " (as", " (because", " (from", " (which", " car ", " porque ", " parce que", "，因为", " 因为"} {
		if k := strings.Index(low, m); k > 0 && k < cut {
			cut = k
		}
	}
	if k := remarkStart(line); k > 0 && k < cut {
		cut = k
	}
	return line[:cut]
}

// leadingMath returns the content of a $...$, $$...$$, \(...\) or \[...\] span at the start of
// s and the length of the span.
func leadingMath(s string) (string, int, bool) {
	pairs := [][2]string{{"$$", "$$"}, {`\[`, `\]`}, {`\(`, `\)`}, {"$", "$"}}
	for _, p := range pairs {
		if !strings.HasPrefix(s, p[0]) {
			continue
		}
		body := s[len(p[0]):]
		for k := 0; k < len(body); k++ {
			if body[k] == '\\' && p[1] == "$" && k+1 < len(body) && body[k+1] == '$' {
				k++
				continue
			}
			if strings.HasPrefix(body[k:], p[1]) {
				return body[:k], len(p[0]) + k + len(p[1]), true
			}
		}
		return "", 0, false
	}
	return "", 0, false
}

// cutSentence ends the line at the first sentence end outside $...$.
func cutSentence(line string) string {
	inMath, paren := false, 0
	for k := 0; k < len(line); k++ {
		switch line[k] {
		case '\\':
			k++
		case '$':
			inMath = !inMath
		case '(':
			paren++
		case ')':
			paren--
		case '.':
			if !inMath && paren <= 0 && (k+1 == len(line) || line[k+1] == ' ' || line[k+1] == '\t') {
				return line[:k]
			}
		}
	}
	if k := strings.Index(line, "。"); k > 0 {
		return line[:k]
	}
	return line
}

func answerLike(a string) bool {
	if a == "" || len(a) > 200 {
		return false
	}
	fw := a
	if hasPrefixFold(fw, "the ") {
		fw = strings.TrimSpace(fw[4:])
	}
	if sp := strings.IndexAny(fw, " ,"); sp >= 0 {
		fw = fw[:sp]
	}
	lfw := strings.ToLower(strings.Trim(fw, "(*_"))
	if isStopWord(lfw) || ((lfw == "a" || lfw == "an") && len(fw) < len(a)) {
		return false
	}
	if strings.ContainsAny(a, "0123456789\\$^=/()") {
		return true
	}
	return len(strings.Fields(a)) <= 4
}

// mathEndsLine reports whether s opens an inline math span that only punctuation follows on
// its line ("$42$.").
func mathEndsLine(s string) bool {
	_, n, ok := leadingMath(s)
	if !ok {
		return false
	}
	rest := s[n:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	return strings.Trim(rest, " \t\r.!*。") == ""
}

// remarkStart finds a parenthetical remark after the answer, " (A and B ignore friction)",
// and returns where it starts, or -1; "(B)", "(1, 2)" and "(mod 7)"-like short math stay.
func remarkStart(line string) int {
	for k := 1; k+3 < len(line); k++ {
		if line[k] != '(' || line[k-1] != ' ' {
			continue
		}
		words := 0
		for _, w := range strings.FieldsFunc(line[k+1:], func(r rune) bool { return r == ' ' || r == ')' || r == ',' || r == ';' }) {
			if len(w) >= 3 && isASCIIWord(w) || remarkWord(strings.TrimRight(w, ".")) {
				words++
			}
		}
		if words >= 2 {
			return k
		}
	}
	return -1
}

// remarkWord reports a word of another script in a remark: "(см. выше)".
func remarkWord(w string) bool {
	n := 0
	for _, r := range w {
		if r < utf8.RuneSelf || !unicode.IsLetter(r) {
			return false
		}
		n++
	}
	return n >= 2
}

// trimJoiner drops an "and" left before a cut remark: "42 and I hope it is correct".
func trimJoiner(s string) string {
	t := strings.TrimRight(s, " \t")
	for _, w := range [...]string{" and", ","} {
		t = strings.TrimSuffix(t, w)
	}
	return t
}

// cutOffList reports a statement that ends on a word or mark joining it to more: "15, and",
// "2 or".
func cutOffList(a string) bool {
	t := strings.TrimRight(a, " \t")
	for _, w := range [...]string{" and", " or", ",", " et", " y", " und", " и", "和", "或"} {
		if strings.HasSuffix(t, w) {
			return true
		}
	}
	return false
}
