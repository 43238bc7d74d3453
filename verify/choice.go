package verify

import "strings"

// goldChoice recognises a multiple-choice gold answer: A, (A), A), A.
func goldChoice(toks []token) (byte, bool) {
	switch len(toks) {
	case 1:
		return choiceLetter(toks[0], false)
	case 2:
		if toks[1].kind == tOp && (toks[1].text == ")" || toks[1].text == ".") {
			return choiceLetter(toks[0], true)
		}
	case 3:
		if isOpTok(toks[0], "(") && isOpTok(toks[2], ")") {
			return choiceLetter(toks[1], true)
		}
	}
	// "(C) 15": a choice letter with its option text.
	if len(toks) > 3 && isOpTok(toks[0], "(") && isOpTok(toks[2], ")") {
		if l, ok := choiceLetter(toks[1], false); ok {
			return l, true
		}
	}
	return 0, false
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

// predChoice finds the one choice letter a prediction names: "(B)", "B)", "B. 42", "Option B".
func predChoice(toks []token) (byte, bool) {
	i := 0
	for i < len(toks) && toks[i].kind == tWord {
		switch strings.ToLower(toks[i].text) {
		case "option", "choice", "answer", "is", "the", "correct":
			i++
			continue
		}
		break
	}
	var letter byte
	var next int
	switch {
	case i+2 < len(toks) && isOpTok(toks[i], "(") && isOpTok(toks[i+2], ")"):
		l, ok := choiceLetter(toks[i+1], true)
		if !ok {
			return 0, false
		}
		letter, next = l, i+3
	case i+1 < len(toks) && isOpTok(toks[i+1], ")"):
		l, ok := choiceLetter(toks[i], true)
		if !ok {
			return 0, false
		}
		letter, next = l, i+2
	case i < len(toks):
		l, ok := choiceLetter(toks[i], false)
		if !ok {
			return 0, false
		}
		letter, next = l, i+1
		if next < len(toks) {
			t := toks[next]
			if t.kind != tOp || (t.text != "." && t.text != ":" && t.text != ",") {
				return 0, false
			}
		}
	default:
		return 0, false
	}
	// Any other choice letter makes the prediction ambiguous: "A, B", "(B) or (C)".
	for k := next; k < len(toks); k++ {
		wrapped := k > 0 && k+1 < len(toks) && isOpTok(toks[k-1], "(") && isOpTok(toks[k+1], ")")
		if l, ok := choiceLetter(toks[k], wrapped); ok && l != letter {
			return 0, false
		}
	}
	return letter, true
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
