package verify

import (
	"strings"
	"unicode/utf8"
)

// This file holds what tells that a text stops mid-solution, and the readings of the end of
// a text that go with it. Whether a text was cut off is a fact when the finish reason is known
// (see [Options]); without it, a text that visibly stops mid-way counts as cut off: inside an
// unclosed math span, box or bracket, a <think> never left, a text that says it goes on
// ("[continued]"), or a final sentence with no full stop that stops mid-sentence after its
// value ([unfinishedTail]). A final sentence that ends on a word that needs what follows
// ("and", "the", "is", "所以") states no value, whatever the finish reason. The file also
// reads a choice letter that opens a solution ("B. Option A overlooks ...").

// unclosedThink reports a text whose last <think> is never closed and has no <answer> tag
// after it: the text never left its reasoning. An answer tag after an unclosed <think> ends
// the reasoning (the model forgot "</think>" and answered in the rollout format).
func unclosedThink(text string) bool {
	i := lastIndex(text, "<think>")
	return i >= 0 && !strings.Contains(text[i:], "</think>") && indexFold(text[i:], "<answer>") < 0
}

// bracketOpenAtEnd reports a text whose final sentence runs to its end inside a bracket:
// "..., so the ordered pair is (3, 5".
func bracketOpenAtEnd(te textEnd) bool {
	return te.atEnd && bracketsOpen(te.sentence)
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
// an article, a preposition, a copula, a relative pronoun or a conclusion word ("..., and",
// "the area of the", "so each group gets", "plus the 4 who", "所以", "12個の"), or whose last
// math ends on an operator ("12 +", "x ="). Such a sentence states no value, however the text
// ended. A sentence that runs to the end of its text with no full stop (open) is also read for
// the words of [endWord]. Bold or italic marks glued to a value ("**42**") are no operator.
func danglingEnd(segs []segment, open bool) bool {
	if len(segs) == 0 {
		return false
	}
	last := segs[len(segs)-1]
	switch last.kind {
	case segWord:
		return danglingWord(last.text) || open && endWord(last.text)
	case segPlain:
		t := strings.TrimSpace(last.text)
		if u := strings.TrimRight(t, "*_"); len(u) < len(t) && u != "" && u[len(u)-1] != ' ' {
			t = u // "42**": the end of a bold value
		}
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

// endWord reports more words that a sentence running to the end of its text without a full
// stop does not end on when it is complete: relative pronouns, prepositions, subject pronouns
// and auxiliaries that wait for more ("which", "for", "we", "must", "exactly"), a lower-case
// article "a" (a capital A may be a choice), Japanese particles ("12個の", "答えは") and
// Chinese verbs and prepositions that need their object ("小红有"). With a full stop after
// them some are complete ("at 10 am.", "12, exactly."), so only an open sentence is read for
// them.
func endWord(w string) bool {
	if w == "a" {
		return true
	}
	if r, _ := utf8.DecodeRuneInString(w); isHan(r) {
		for _, p := range [...]string{"は", "が", "を", "に", "の", "で", "と", "も", "から", "まで", "より", "して",
			"有", "把", "在", "给", "比", "从", "到", "对", "被", "向", "共", "约"} {
			if strings.HasSuffix(w, p) {
				return true
			}
		}
		return false
	}
	switch strings.ToLower(w) {
	case "which", "who", "whom", "that", "where", "when", "while", "if", "whether", "every", "on", "at", "for",
		"about", "per", "during", "without", "within", "among", "across", "toward", "towards", "onto", "upon", "via",
		"we", "they", "he", "she", "will", "would", "should", "must", "shall", "be", "been", "being", "what",
		"how", "why", "exactly", "precisely", "approximately", "roughly", "nearly", "almost", "genau", "exactement",
		"exactamente", "esattamente", "exatamente", "ровно",
		"qui", "où", "quand", "pour", "dans", "sur", "en", "au", "aux", "à", "elle", "nous", "ils", "ce",
		"cette", "son", "sa", "ses", "leur",
		"wir", "er", "im", "zum", "zur", "vom", "auf", "für", "bei", "nach", "aus", "weil", "wenn", "sein", "seine",
		"einen", "einem", "einer",
		"que", "al", "por", "su", "sus", "cuando", "donde", "il", "lo", "gli", "di", "da", "della", "del", "che",
		"nella", "nel", "em", "com",
		"что", "который", "которая", "которые", "если", "когда", "из", "от", "до", "за", "для", "у", "о", "он",
		"она", "они", "мы", "это":
		return true
	}
	return false
}

// unfinishedTail reports a final sentence that, after its last value, opens what it never
// finishes, as a text cut off mid-sentence does: a conclusion word or a verb that announces a
// result ("..., so one notebook", "which means the runner"), a quantity named for a value
// that never comes ("after 12 turns the total", "its average speed", "после 12 ходов
// сумма", "经过12轮后，总分"), a new clause ("12 marbles and the second", "..., its area",
// "30 учеников, а во втором") or a symbol joined to the value with no value of its own ("x =
// 5 and y"). A sentence without a value is read from its start. A determiner after a copula
// ("12 is the answer") or an infinitive ("to cover the distance") stays the sentence's own.
func unfinishedTail(segs []segment) bool {
	lv := -1
	for k := len(segs) - 1; k >= 0; k-- {
		if isValueSeg(segs[k]) || choiceSeg(segs[k]) {
			lv = k
			break
		}
	}
	tail := segs[lv+1:]
	if n := len(tail); n >= 2 && symbolSeg(tail[n-1]) && (tail[n-2].kind == segWord && isConnector(tail[n-2].text) ||
		tail[n-2].kind == segPunct && (tail[n-2].text == "," || tail[n-2].text == "，")) {
		return true // "x = 5 and y"
	}
	if n := len(tail); n >= 2 && tail[n-1].kind == segWord && objectPronoun(tail[n-1].text) && tail[n-2].kind == segWord &&
		copulaWord(tail[n-2].text) {
		return true // "which gives us"
	}
	if lv >= 0 && !strings.ContainsAny(segs[lv].text, "=:") && subjectWithoutVerb(segs[:lv]) {
		return true // "el total de lápices en las 5 cajas"
	}
	prev := segment{}
	if lv >= 0 {
		prev = segs[lv]
	}
	broken := false // a clause break since the value: its copula no longer follows the value
	for k, sg := range tail {
		if k > 0 {
			prev = tail[k-1]
		}
		if prev.kind == segPunct && prev.text != "—" || prev.kind == segWord && coordConj(strings.ToLower(prev.text)) {
			broken = true
		}
		// "12 is the answer", "7 — это ответ": a noun phrase after the value's own copula
		afterCopula := !broken && (prev.kind == segWord && (copulaWord(prev.text) || arabicCopula(prev.text) ||
			prev.text == "это") || prev.kind == segPunct && prev.text == "—")
		// "to cover the distance": a determiner after an infinitive is its object
		infinitive := k >= 2 && tail[k-2].kind == segWord && strings.EqualFold(tail[k-2].text, "to") && prev.kind == segWord
		if sg.kind != segWord {
			continue
		}
		w := strings.ToLower(sg.text)
		switch {
		case resultWord(w), hanResult(sg.text), arabicCopula(w) && k+1 < len(tail),
			w == "lo" && strings.EqualFold(prev.text, "por"): // "por lo que", "por lo tanto"
			return true
		case bareQuantity(w) && !afterCopula:
			return true
		case determiner(sg.text) && !afterCopula && !infinitive && quantityPhrase(tail[k+1:]):
			return true
		case prev.kind == segPunct && clausePunct(prev.text) && (determiner(sg.text) || subjectPronoun(w) || coordConj(w)),
			prev.kind == segWord && coordConj(strings.ToLower(prev.text)) && (determiner(sg.text) || subjectPronoun(w)):
			return true // "..., its area", "and the second", "und die zweite", ", а во втором"
		case prev.kind == segPunct && clausePunct(prev.text) && k == len(tail)-1 && capitalized(sg.text):
			return true // "After giving 4 to his sister, Tom": a new subject
		}
	}
	return false
}

// subjectWithoutVerb reports a final clause that opens on a quantity as its subject and
// reaches the value through no verb ("So the total number of apples after 12 turns", "el
// total de lápices en las 5 cajas"): the value only describes the subject, whose own value
// never comes. before is the sentence up to its last value ("= 24" is a verb of its own).
func subjectWithoutVerb(before []segment) bool {
	start := 0
	for k := len(before) - 1; k >= 0; k-- {
		if before[k].kind == segPunct && clausePunct(before[k].text) {
			start = k + 1
			break
		}
	}
	clause := before[start:]
	for len(clause) > 0 && clause[0].kind == segWord && (resultWord(strings.ToLower(clause[0].text)) ||
		coordConj(strings.ToLower(clause[0].text)) || leadWord(clause[0].text)) {
		clause = clause[1:]
	}
	if len(clause) < 2 || clause[0].kind != segWord || !determiner(clause[0].text) {
		return false
	}
	q := -1
	for j := 1; j < len(clause) && j <= 3 && clause[j].kind == segWord; j++ {
		if quantityNoun(strings.ToLower(clause[j].text)) {
			q = j
			break
		}
	}
	if q < 0 {
		return false
	}
	for _, sg := range clause[q+1:] {
		switch {
		case sg.kind == segWord && (copulaWord(sg.text) || verbWord(sg.text)):
			return false
		case sg.kind != segWord && strings.ContainsAny(sg.text, "=:"):
			return false
		}
	}
	return true
}

// leadWord reports words that may open a final clause before its subject: "now", "ahora",
// "finally".
func leadWord(w string) bool {
	switch strings.ToLower(w) {
	case "now", "finally", "altogether", "overall", "ahora", "maintenant", "jetzt", "ora", "agora", "enfin", "finalmente":
		return true
	}
	return false
}

// verbWord reports verbs that carry a quantity to its value, and English past forms ("-ed"):
// "works out to", "comes to", "came", "increased", "fait", "tiene", "hat".
func verbWord(w string) bool {
	l := strings.ToLower(w)
	if len(l) > 3 && strings.HasSuffix(l, "ed") && isASCIIWord(l) {
		return true
	}
	switch l {
	case "works", "comes", "came", "amounts", "adds", "sums", "totals", "reaches", "stands", "stood", "remains",
		"becomes", "became", "turns", "goes", "went", "rises", "rose", "falls", "fell", "grows", "grew", "drops",
		"increases", "decreases", "doubles", "triples", "ends", "has", "have", "had", "costs", "cost", "takes",
		"took", "needs", "holds", "contains", "will", "would", "should", "must", "can", "could",
		"fait", "font", "donne", "sont", "coûte", "ergibt", "macht", "kostet", "sind", "hat", "haben", "tiene",
		"tienen", "son", "cuesta", "da", "dà", "ha", "hanno", "costa", "são", "tem":
		return true
	}
	return false
}

// objectPronoun reports pronouns a verb takes as its object before what it gives: "gives
// us".
func objectPronoun(w string) bool {
	switch strings.ToLower(w) {
	case "us", "me", "them", "him", "you":
		return true
	}
	return false
}

// capitalized reports a Latin word of two or more letters that starts with a capital: a name.
func capitalized(w string) bool {
	return len(w) >= 2 && w[0] >= 'A' && w[0] <= 'Z' && isASCIIWord(w)
}

// choiceSeg reports a choice letter standing alone: "it's B".
func choiceSeg(sg segment) bool {
	t := strings.TrimSpace(sg.text)
	return sg.kind == segPlain && len(t) == 1 && t[0] >= 'A' && t[0] <= 'J'
}

// symbolSeg reports a lone letter used as a symbol: "y", "$y$".
func symbolSeg(sg segment) bool {
	t := strings.TrimSpace(sg.text)
	return (sg.kind == segPlain || sg.kind == segMath) && len(t) == 1 && isLetter(t[0])
}

// quantityPhrase reports whether the words after a determiner name a quantity: "the total",
// "its average speed", "le nombre", or end on an ordinal ("and the second").
func quantityPhrase(after []segment) bool {
	for j := 0; j < len(after) && j < 3 && after[j].kind == segWord; j++ {
		w := strings.ToLower(after[j].text)
		if quantityNoun(w) || j == len(after)-1 && endOrdinal(w) {
			return true
		}
	}
	return false
}

// resultWord reports words that announce a result still to come: "so", "therefore",
// "means", "donc", "поэтому", "所以".
func resultWord(w string) bool {
	switch w {
	case "so", "therefore", "thus", "hence", "consequently", "means", "meaning", "implies", "donc", "alors", "ainsi",
		"daher", "deshalb", "deswegen", "somit", "entonces", "portanto", "então", "quindi", "dunque", "perciò",
		"поэтому", "значит", "следовательно", "итак", "इसलिए", "अतः", "لذلك", "إذن", "vậy", "jadi", "dolayısıyla",
		"zatem", "więc", "dus", "daarom":
		return true
	}
	return false
}

// hanResult reports a word of Chinese, Japanese or Korean that announces a result or names a
// total: "所以", "总分", "合計", "합계".
func hanResult(w string) bool {
	if r, _ := utf8.DecodeRuneInString(w); !isHan(r) {
		return false
	}
	for _, c := range [...]string{"所以", "因此", "于是", "总", "總", "合計", "合计", "結果", "结果", "答案", "答え", "합계", "결과", "총합", "따라서"} {
		if strings.Contains(w, c) {
			return true
		}
	}
	return false
}

// quantityNoun reports nouns that name the quantity a sentence is about to state: "total",
// "number", "area", "speed", "résultat", "Anzahl", "precio", and German compounds ending in
// one ("Flächeninhalt", "Gesamtpreis").
func quantityNoun(w string) bool {
	for _, end := range [...]string{"inhalt", "zahl", "summe", "preis", "fläche", "länge", "menge", "betrag", "kosten", "umfang"} {
		if len(w) > len(end) && strings.HasSuffix(w, end) {
			return true
		}
	}
	switch w {
	case "total", "sum", "number", "amount", "cost", "price", "area", "perimeter", "volume", "length", "width",
		"height", "distance", "speed", "time", "probability", "chance", "answer", "result", "difference", "product",
		"quotient", "remainder", "ratio", "average", "mean", "median", "value", "score", "count", "rate",
		"percentage", "fraction", "angle", "hypotenuse", "weight", "mass", "age", "profit", "balance",
		"circumference", "radius", "diameter", "ángulo", "winkel", "angolo", "ângulo",
		"somme", "nombre", "résultat", "prix", "coût", "aire", "périmètre", "vitesse", "probabilité", "réponse",
		"moyenne", "valeur", "longueur", "durée",
		"summe", "gesamtzahl", "anzahl", "ergebnis", "preis", "kosten", "fläche", "umfang", "geschwindigkeit",
		"wahrscheinlichkeit", "antwort", "wert", "länge", "betrag",
		"suma", "número", "resultado", "precio", "costo", "coste", "área", "perímetro", "velocidad", "probabilidad",
		"respuesta", "valor", "longitud", "totale", "somma", "numero", "risultato", "prezzo", "perimetro",
		"velocità", "probabilità", "risposta", "valore", "soma", "preço", "custo", "velocidade", "probabilidade",
		"resposta":
		return true
	}
	return false
}

// bareQuantity reports nouns naming a total in languages without articles (Russian, Hindi) or
// with the article glued on (Arabic): "сумма", "कुल", "المجموع".
func bareQuantity(w string) bool {
	switch w {
	case "сумма", "итог", "ответ", "результат", "площадь", "периметр", "стоимость", "цена", "вероятность",
		"скорость", "объём", "объем", "количество", "разность", "произведение",
		"कुल", "योग", "उत्तर", "परिणाम", "क्षेत्रफल",
		"المجموع", "الناتج", "النتيجة", "العدد", "الجواب", "الإجابة", "المساحة", "المحيط", "السعر", "الثمن", "الاحتمال":
		return true
	}
	return false
}

// arabicCopula reports Arabic verbs that introduce a value: "يكون", "يساوي".
func arabicCopula(w string) bool {
	switch w {
	case "يكون", "تكون", "يساوي", "تساوي", "يصبح", "تصبح", "هو", "هي":
		return true
	}
	return false
}

// endOrdinal reports words a noun phrase ends on only when the noun comes later: "the
// second", "the other", "la segunda", "die zweite".
func endOrdinal(w string) bool {
	switch w {
	case "first", "second", "third", "last", "other", "others", "rest", "next", "latter", "former", "one",
		"premier", "première", "seconde", "deuxième", "autre", "reste", "erste", "zweite", "dritte",
		"andere", "letzte", "primera", "primero", "segunda", "segundo", "otra", "otro", "resto", "prima",
		"primo", "seconda", "secondo", "altra", "altro", "primeira", "outra", "outro":
		return true
	}
	return false
}

// determiner reports articles, possessives and quantifiers that open a noun phrase: "the",
// "its", "each", "la", "die", "el". The article "a" counts only in lower case.
func determiner(w string) bool {
	if w == "a" || w == "an" {
		return true
	}
	switch strings.ToLower(w) {
	case "the", "its", "his", "her", "their", "our", "my", "your", "this", "that", "these", "those", "each", "every",
		"le", "la", "les", "l'", "un", "une", "ce", "cette", "ces", "son", "sa", "ses", "leur", "leurs",
		"der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "sein", "seine", "ihr", "ihre",
		"el", "los", "las", "una", "su", "sus", "este", "esta", "il", "lo", "gli", "uno", "suo", "sua":
		return true
	}
	return false
}

// subjectPronoun reports pronouns that open a clause: "she", "we", "il", "sie", "он".
func subjectPronoun(w string) bool {
	switch w {
	case "he", "she", "it", "they", "we", "you", "il", "elle", "ils", "elles", "on", "nous", "er", "sie", "wir", "man",
		"él", "ella", "ellos", "ellas", "nosotros", "lui", "lei", "loro", "noi", "он", "она", "оно", "они", "мы":
		return true
	}
	return false
}

// coordConj reports conjunctions that join clauses: "and", "but", "et", "und", "а".
func coordConj(w string) bool {
	switch w {
	case "and", "but", "or", "while", "whereas", "then", "et", "mais", "ou", "puis", "und", "aber", "oder", "dann",
		"y", "pero", "ma", "и", "а", "но", "или", "而", "但":
		return true
	}
	return false
}

// clausePunct reports punctuation between clauses.
func clausePunct(p string) bool {
	switch p {
	case ",", ";", ":", "—", "，", "；", "：":
		return true
	}
	return false
}

// bracketsOpen reports text that stops inside a bracket: more "(", "[", "{" than ")", "]",
// "}", or a \begin{...} without its \end ("(3, 5", "[2, 7", "\frac{3}{").
func bracketsOpen(s string) bool {
	if !strings.ContainsAny(s, "([{") {
		return false
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
	}
	return depth > 0 || strings.Count(s, `\begin{`) > strings.Count(s, `\end{`)
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
