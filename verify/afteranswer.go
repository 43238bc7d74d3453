package verify

import (
	"strings"
	"unicode/utf8"
)

// This file holds what the text after a clearly given answer may change. A model often goes
// on writing after its answer: a recap, a sign-off, a fun fact, the next exercise of a
// worksheet, a new <think>. What it writes about another problem is not read at all, and when
// the text is then cut off, the answer it gave stands, unless what follows takes it back
// ("Wait, let me check: ...") or the answer is part of the formula that was cut off.

// maxNewProblemTries bounds the new-problem lines whose text before them is searched for an
// answer.
const maxNewProblemTries = 8

// cutAtNewProblem ends text before the first line that opens another problem ("Question:",
// "**Problem 2.**", "Next question: ...", "问题：", a new "<think>") after an answer was
// clearly given: the model went on to pose, and maybe answer, an exercise of its own.
func cutAtNewProblem(text string) string {
	tries := 0
	for i := 0; i < len(text) && tries < maxNewProblemTries; {
		nl := strings.IndexByte(text[i:], '\n')
		if nl < 0 {
			break
		}
		start := i + nl + 1
		i = start
		if !newProblemLine(text[start:]) {
			continue
		}
		tries++
		if answerGiven(text[:start]) {
			return text[:start]
		}
	}
	return text
}

// answerGiven reports whether text holds a closed answer marker outside an unclosed <think>:
// a tag, a box or a statement.
func answerGiven(text string) bool {
	if unclosedThink(text) {
		return false
	}
	if c, ok := fromTag(text); ok && c.ok {
		return true
	}
	if c, ok := fromBoxed(text, 0); ok && c.ok {
		return true
	}
	c, ok := fromStatement(text, 0)
	return ok && c.ok
}

// newProblemWords open a line that poses another problem when a number, a colon, a full stop,
// bold marks or the line's end follows them ("Question:", "Problem 2.", "**Aufgabe 2:**").
// They are matched ignoring ASCII case; a word with another capital is listed as it starts a
// line.
var newProblemWords = [...]string{
	"question", "problem", "exercise", "example", "q", "task", "bonus question", "practice problem",
	"problème", "exercice", "frage", "aufgabe", "übung", "Übung", "pregunta", "problema", "ejercicio",
	"domanda", "esercizio", "questão", "pergunta", "exercício", "вопрос", "Вопрос", "задача", "Задача",
	"упражнение", "Упражнение", "سؤال", "السؤال", "مسألة", "प्रश्न", "问题", "题目", "例题", "练习", "問題", "문제",
}

// newProblemPhrases open a line that poses another problem whatever follows them.
var newProblemPhrases = [...]string{
	"next question", "next problem", "another question", "another problem", "new problem", "new question",
	"here is another", "here's another", "now try", "try this one", "now solve", "下一题", "下一个问题", "次の問題",
}

// newProblemFirst holds the lower-case first bytes of the new-problem words and phrases.
var newProblemFirst = func() (set [utf8.RuneSelf]bool) {
	for _, w := range newProblemWords {
		if c := lower(w[0]); c < utf8.RuneSelf {
			set[c] = true
		}
	}
	for _, p := range newProblemPhrases {
		if c := lower(p[0]); c < utf8.RuneSelf {
			set[c] = true
		}
	}
	return set
}()

// newProblemLine reports whether line opens another problem, after markdown marks.
func newProblemLine(line string) bool {
	l := strings.TrimLeft(line, " \t#*>_-")
	if l == "" || l[0] < utf8.RuneSelf && !isLetter(l[0]) && l[0] != '<' {
		return false
	}
	if strings.HasPrefix(l, "<think>") {
		return true
	}
	if c := lower(l[0]); c < utf8.RuneSelf && !newProblemFirst[c] {
		return false // no word or phrase starts so ("We add ...")
	}
	for _, p := range newProblemPhrases {
		if hasPrefixFold(l, p) {
			return true
		}
	}
	for _, w := range newProblemWords {
		if !hasPrefixFold(l, w) {
			continue
		}
		rest := strings.TrimLeft(l[len(w):], " ")
		if rest == "" || strings.IndexByte("0123456789:.*#)(\r", rest[0]) >= 0 || strings.HasPrefix(rest, "：") {
			return true
		}
	}
	return false
}

// takenBack says why a text cut off after its answer c gives no answer, or "" when the answer
// stands: the text after it takes it back ("Wait", "let me check", "vérifions", "等等"), or,
// when the text stops inside math (mathCut) opened at openAt, that math span holds the answer
// and goes on after it ("$\boxed{5} + 2 \cdot").
func takenBack(text string, c candidate, mathCut bool, openAt int) string {
	tail := answerTail(text, c)
	if reopens(tail) {
		return reopenedCut
	}
	if mathCut {
		if openAt >= 0 && openAt < c.end &&
			strings.Trim(tail, " \t\r\n.$*\\])}") != "" {
			return "the answer is part of a formula that is cut off"
		}
	}
	return ""
}

// reopenedCut says why a text that takes its answer up again and is cut off gives none.
const reopenedCut = "the text takes its answer up again and is cut off"

// answerTail is the text after answer c.
func answerTail(text string, c candidate) string {
	return text[min(max(c.end, c.pos), len(text)):]
}

// reopenWords take an answer up again: second thoughts and checks, in several languages.
var reopenWords = [...]string{
	"wait", "hmm", "hold on", "actually", "oops", "let me check", "let me verify", "let me double", "let me re",
	"let me make sure", "let me confirm", "let's check", "let's verify", "let's double", "let us check",
	"let us verify", "double-check", "double check", "check", "checking", "verify", "verifying", "verification",
	"recheck", "re-check", "recount", "recompute", "recalculate", "reconsider", "re-examine", "re-evaluate",
	"on second thought", "alternatively", "made a mistake", "my mistake", "a mistake in", "made an error",
	"that's wrong", "that is wrong", "that's incorrect", "that is incorrect", "this is incorrect", "was incorrect",
	"not right",
	"attends", "attendez", "vérifions", "vérifier", "vérification", "erreur", "warte", "moment mal", "prüfe",
	"prüfen", "überprüfe", "überprüfen", "fehler", "espera", "verifiquemos", "comprobemos", "comprobación",
	"verificar", "verificación", "aspetta", "verifichiamo", "подожди", "проверим", "проверка", "проверить",
	"ошибка", "等等", "等一下", "验证", "检验", "检查", "不对", "错了", "待って", "確認", "検算", "انتظر", "تحقق",
}

// maxReopenRead bounds the text after an answer that is read for second thoughts.
const maxReopenRead = 16 << 10

// reopens reports whether tail, the text after an answer, takes it up again (in its first
// 16 KiB).
func reopens(tail string) bool {
	low := strings.ToLower(textHead(tail, maxReopenRead))
	for _, w := range reopenWords {
		for from := 0; from < len(low); {
			k := strings.Index(low[from:], w)
			if k < 0 {
				break
			}
			k += from
			end := k + len(w)
			if (k == 0 || !isLetter(low[k-1])) && (end == len(low) || !isLetter(low[end]) || w[len(w)-1] == ' ' || strings.HasSuffix(w, "re")) {
				return true
			}
			from = k + 1
		}
	}
	return false
}
