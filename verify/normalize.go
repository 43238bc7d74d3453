package verify

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// turnTokens are chat-template tokens that end a model's turn or open another one. Text after
// the first of them that follows some content is not part of the answer.
var turnTokens = [...]string{
	"<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|eom_id|>",
	"<|end|>", "<|start_header_id|>", "<|end_header_id|>", "<|assistant|>", "<|user|>", "<|system|>",
	"</s>", "<end_of_turn>", "<start_of_turn>", "<｜end▁of▁sentence｜>", "<|end▁of▁sentence|>",
	"<｜Assistant｜>", "<｜User｜>", "<|endofturn|>", "<eos>", "<|eos|>", "<|end_of_turn|>", "<|return|>",
	"<|EOT|>", "<|eot|>", "<end_of_utterance>", "<|END_OF_TURN_TOKEN|>", "<|START_OF_TURN_TOKEN|>",
	"<|endofmessage|>", "<|end_of_role|>", "<|start_of_role|>", "<|im_sep|>", "<<SYS>>",
}

// turnLines open another turn without a template token: an instruction tag of the Llama-2
// template or a role name that starts a line ("\nHuman:", "\nUSER:"). Text after the first
// of them that follows some content is not part of the answer.
var turnLines = [...]string{
	"[/INST]", "[INST]", "\nHuman:", "\nHUMAN:", "\nUser:", "\nUSER:", "\n### Human:", "\n### User:",
	"\n### Instruction:", "\n### Input:", "\nuser\n", "\nassistant\n", "\n<|user|>",
}

// cutAtTurnLine ends s at the first turn line that follows some content. Every turn line
// starts with '[' or a line break, so only those places are tried.
func cutAtTurnLine(s string) string {
	cut := len(s)
	for _, c := range [...]byte{'[', '\n'} {
		for i := 0; i < cut; i++ {
			j := strings.IndexByte(s[i:cut], c)
			if j < 0 {
				break
			}
			i += j
			if turnLineAt(s[i:]) && strings.TrimSpace(s[:i]) != "" {
				cut = i
				break
			}
		}
	}
	return s[:cut]
}

func turnLineAt(s string) bool {
	for _, t := range turnLines {
		if strings.HasPrefix(s, t) {
			return true
		}
	}
	return false
}

// cutPartialToken drops the start of a chat-template token that ends the text: a log cut
// inside "<|im_end|>" leaves "<|im_end" or "<|im_".
func cutPartialToken(s string) string {
	i := strings.LastIndexByte(s[max(len(s)-32, 0):], '<')
	if i < 0 {
		return s
	}
	i += max(len(s)-32, 0)
	tail := s[i:]
	if len(tail) < 3 {
		return s
	}
	for _, t := range turnTokens {
		if len(tail) < len(t) && strings.HasPrefix(t, tail) {
			return s[:i]
		}
	}
	return s
}

// trimJunkTail drops what a decoder leaves after the last words: special tokens of any
// template (<pad>, <unk>, <|reserved_special_token_0|>, a stray </answer>), end marks such as
// [END] or [end of text], and check marks or emoji.
func trimJunkTail(s string) string {
	for range 16 {
		t := strings.TrimRight(s, " \t\r\n")
		switch {
		case strings.HasSuffix(t, ">"):
			i := strings.LastIndexByte(t, '<')
			if tok := t[i+1 : len(t)-1]; i < 0 || !tokenLike(tok) || strings.TrimPrefix(tok, "/") == "think" {
				return s
			}
			t = t[:i]
		case strings.HasSuffix(t, "]"):
			i := strings.LastIndexByte(t, '[')
			if i < 0 || !endMark(t[i+1:len(t)-1]) {
				return s
			}
			t = t[:i]
		default:
			r, n := utf8.DecodeLastRuneInString(t)
			if n == 0 || foldRune(r) >= 0 {
				return s
			}
			t = t[:len(t)-n]
		}
		s = t
	}
	return s
}

// tokenLike reports the inside of a special token: letters, digits, "_", "|", "/", "▁", "｜"
// and "-", with no space.
func tokenLike(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r < utf8.RuneSelf && (isLetter(byte(r)) || isDigit(byte(r)) || strings.ContainsRune("_|/-", r)) || r == '▁' || r == '｜') {
			return false
		}
	}
	return true
}

// endMark reports the inside of an end mark in square brackets: [END], [EOS], [end of text].
func endMark(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "end", "eos", "end of text", "endoftext", "done", "stop", "end of answer", "end of solution":
		return true
	}
	return false
}

// nextTurnToken returns the earliest chat-template token in s: its position and length. Every
// token starts with '<', so only the places of a '<' are tried, in one pass.
func nextTurnToken(s string) (int, int) {
	for i := 0; ; i++ {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1, 0
		}
		i += j
		for _, t := range turnTokens {
			if strings.HasPrefix(s[i:], t) {
				return i, len(t)
			}
		}
	}
}

// cutAtTurnEnd drops chat-template tokens: leading ones (with the role name that follows an
// opening token) are skipped, and the text ends at the first one that follows some content,
// at a turn line (see turnLines) or before a token cut off at its end.
func cutAtTurnEnd(s string) string {
	t, _ := cutTurn(s)
	return t
}

// cutTurn is [cutAtTurnEnd], and it also reports whether something of the model's end
// followed the text's last words: a template token or its cut-off start, a turn line, or
// decoder junk. Such a text was ended by the model, not cut off.
func cutTurn(s string) (string, bool) {
	for range 16 {
		i, n := nextTurnToken(s)
		if i < 0 {
			t := trimJunkTail(cutPartialToken(cutAtTurnLine(s)))
			return t, len(strings.TrimRight(t, " \t\r\n")) < len(strings.TrimRight(s, " \t\r\n"))
		}
		if strings.TrimSpace(s[:i]) != "" {
			return trimJunkTail(cutAtTurnLine(s[:i])), true
		}
		s = s[i+n:]
		for _, role := range [...]string{"assistant", "user", "system", "model"} {
			if rest, ok := strings.CutPrefix(s, role); ok && (rest == "" || rest[0] == '\n' || rest[0] == '\r') {
				s = rest
				break
			}
		}
	}
	return s, false
}

// overEscaped reports whether s went through JSON escaping twice: a doubled backslash stands
// before a command name (`\\frac`), or every backslash is doubled and one of them escapes a brace
// or another LaTeX symbol (`\\{1, 2\\}`).
func overEscaped(s string) bool {
	if !strings.Contains(s, `\\`) {
		return false
	}
	weak, single := false, false
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '\\' {
			j++
		}
		run := j - i
		switch {
		case run == 2 && j+1 < len(s) && isLetter(s[j]) && isLetter(s[j+1]):
			return true
		case run == 2 && j < len(s) && strings.IndexByte("{}%$()[],!;", s[j]) >= 0:
			weak = true
		case run == 1 && j < len(s) && isLetter(s[j]):
			single = true
		}
		i = j
	}
	return weak && !single
}

// unescapeLatex undoes a second round of escaping: `\\frac` is `\frac` and an escaped row
// separator `\\\\` is `\\`; a single-escaped row separator (`1 \\ 2`) stays what it is.
func unescapeLatex(s string) string {
	if !overEscaped(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '\\' {
			j++
		}
		run := j - i
		switch {
		case run == 2 && j < len(s) && (isLetter(s[j]) || strings.IndexByte("{}%$()[],!;: ", s[j]) >= 0):
			run = 1
		case run == 4:
			run = 2
		}
		b.WriteString(strings.Repeat(`\`, run))
		i = j
	}
	return b.String()
}

// foldRune maps a character to its plain ASCII spelling where there is one: full-width forms,
// digits of other scripts, CJK and Arabic punctuation. It returns -1 to drop the character.
func foldRune(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		return r - 0xFEE0 // full-width ASCII
	case r >= 0x0660 && r <= 0x0669:
		return '0' + r - 0x0660 // Arabic-Indic
	case r >= 0x06F0 && r <= 0x06F9:
		return '0' + r - 0x06F0 // Persian
	case r >= 0x0966 && r <= 0x096F:
		return '0' + r - 0x0966 // Devanagari
	case r >= 0x09E6 && r <= 0x09EF:
		return '0' + r - 0x09E6 // Bengali
	}
	switch r {
	case '٫':
		return '.'
	case '٬', '،', '、':
		return ','
	case '∶':
		return ':'
	case '।', '۔':
		return '.'
	case '؛':
		return ';'
	case '≧':
		return '≥'
	case '≦':
		return '≤'
	case '✓', '✔', '✅', '☑', '✗', '✘', '❌', '∴', '∵':
		return -1
	}
	if r >= 0x1F300 && r <= 0x1FAFF {
		return -1 // emoji
	}
	return r
}

// foldUnicode applies foldRune to s; ASCII text is returned as it is.
func foldUnicode(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	return strings.Map(foldRune, s)
}

// isWordRune reports letters of any script (and their combining marks) that make up words;
// Greek letters and π are symbols.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isLetter(byte(r))
	}
	if _, greek := greekRune(r); greek || r == 'π' {
		return false
	}
	return unicode.IsLetter(r) || unicode.IsMark(r)
}

// isHan reports CJK ideographs, kana and hangul.
func isHan(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r)
}
