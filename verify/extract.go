package verify

import (
	"strings"
	"unicode/utf8"
)

// maxExtractLen bounds the text Extract looks at: only the last MiB of a solution is read.
const maxExtractLen = 1 << 20

// Extract returns the final answer of a model solution: the content of the last
// <answer>...</answer> tag, else of the last \boxed{...} or \fbox{...} (nested braces allowed,
// also "\boxed 5"; boxes side by side at the end are joined with ", "), else of the last
// explicit final-answer statement ("The final answer is 7", "Final Answer: 7", an "Answer: 7"
// line, "**Answer:** 7", "the correct option is C", "答案是 7", a GSM8K "#### 7" line). Without
// such a marker it returns ok=false rather than guessing. A last \boxed{ that is never closed
// (a truncated output) also gives ok=false.
func Extract(text string) (answer string, ok bool) {
	if len(text) > maxExtractLen {
		text = text[len(text)-maxExtractLen:]
		for len(text) > 0 && !utf8.RuneStart(text[0]) {
			text = text[1:]
		}
	}
	if a, found, ok := fromTag(text); found {
		return a, ok
	}
	if a, found, ok := fromBoxed(text); found {
		return a, ok
	}
	return fromStatement(text)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 32
	}
	return c
}

// hasPrefixFold reports whether s starts with the lower-case ASCII prefix p, ignoring case.
func hasPrefixFold(s, p string) bool {
	if len(s) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if lower(s[i]) != p[i] {
			return false
		}
	}
	return true
}

// lastIndexFold is strings.LastIndex ignoring ASCII case; sub must be lower case.
func lastIndexFold(s, sub string) int {
	for i := len(s) - len(sub); i >= 0; i-- {
		if lower(s[i]) == sub[0] && hasPrefixFold(s[i:], sub) {
			return i
		}
	}
	return -1
}

func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if lower(s[i]) == sub[0] && hasPrefixFold(s[i:], sub) {
			return i
		}
	}
	return -1
}

func fromTag(text string) (string, bool, bool) {
	i := lastIndexFold(text, "<answer>")
	if i < 0 {
		return "", false, false
	}
	content := text[i+len("<answer>"):]
	if j := indexFold(content, "</answer>"); j >= 0 {
		content = content[:j]
	}
	if a, found, ok := fromBoxed(content); found {
		return a, true, ok
	}
	if a, ok := fromStatement(content); ok {
		return a, true, true
	}
	a := cleanAnswer(content)
	if a == "" {
		return "", false, false
	}
	return a, true, true
}

func fromBoxed(text string) (string, bool, bool) {
	i := strings.LastIndex(text, `\boxed`)
	name := len(`\boxed`)
	if j := strings.LastIndex(text, `\fbox`); j > i {
		i, name = j, len(`\fbox`)
	}
	if i < 0 {
		return "", false, false
	}
	j := i + name
	if j < len(text) && isLetter(text[j]) {
		return "", false, false
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	if j >= len(text) {
		return "", true, false
	}
	var content string
	if text[j] == '{' {
		c, _, closed := braced(text, j)
		if !closed {
			return "", true, false
		}
		content = c
	} else {
		k := j
		for k < len(text) && text[k] != ' ' && text[k] != '\n' && text[k] != '$' && text[k] != '\t' {
			k++
		}
		content = text[j:k]
	}
	a := cleanAnswer(content)
	if a == "" {
		return "", true, false
	}
	// Boxes written side by side ("\boxed{-2} and \boxed{1}") together hold the answer.
	parts := []string{a}
	before := text[:i]
	for len(parts) < 8 {
		prev, start, ok := boxBefore(before)
		if !ok {
			break
		}
		parts = append(parts, prev)
		before = before[:start]
	}
	if len(parts) == 1 {
		return a, true, true
	}
	for l, r := 0, len(parts)-1; l < r; l, r = l+1, r-1 {
		parts[l], parts[r] = parts[r], parts[l]
	}
	// The same answer boxed twice is one answer.
	uniq := parts[:1]
	for _, p := range parts[1:] {
		dup := false
		for _, u := range uniq {
			dup = dup || u == p
		}
		if !dup {
			uniq = append(uniq, p)
		}
	}
	return strings.Join(uniq, ", "), true, true
}

// boxBefore finds a \boxed{...} that ends text, after separators only, and returns its content
// and where it starts.
func boxBefore(text string) (string, int, bool) {
	t := text
	for {
		before := t
		t = strings.TrimRight(t, " \t\r\n$,;")
		for _, sep := range [...]string{
			`\quad`, `\qquad`, `\text{ and }`, `\text{and}`, `\text{ or }`, `\text{or}`, `\]`, `\[`,
			`\)`, `\(`, `\,`, `\;`, `\\`, "and", "or",
		} {
			t = strings.TrimSuffix(t, sep)
		}
		if t == before {
			break
		}
	}
	if !strings.HasSuffix(t, "}") {
		return "", 0, false
	}
	depth := 0
	open := -1
	for k := len(t) - 1; k >= 0; k-- {
		switch t[k] {
		case '}':
			if k == 0 || t[k-1] != '\\' {
				depth++
			}
		case '{':
			if k == 0 || t[k-1] != '\\' {
				depth--
			}
		}
		if depth == 0 {
			open = k
			break
		}
	}
	if open < 0 {
		return "", 0, false
	}
	head := strings.TrimRight(t[:open], " ")
	var start int
	switch {
	case strings.HasSuffix(head, `\boxed`):
		start = len(head) - len(`\boxed`)
	case strings.HasSuffix(head, `\fbox`):
		start = len(head) - len(`\fbox`)
	default:
		return "", 0, false
	}
	a := cleanAnswer(t[open+1 : len(t)-1])
	return a, start, a != ""
}

// cleanAnswer trims math delimiters, bold marks and closing punctuation around an answer.
func cleanAnswer(s string) string {
	for range 4 {
		before := s
		s = strings.TrimSpace(s)
		s = strings.TrimSuffix(s, "**")
		s = strings.TrimPrefix(s, "**")
		s = trimClosingPunct(strings.TrimSuffix(s, "。"))
		switch {
		case len(s) >= 4 && strings.HasPrefix(s, "$$") && strings.HasSuffix(s, "$$"):
			s = s[2 : len(s)-2]
		case len(s) >= 2 && s[0] == '$' && s[len(s)-1] == '$' && !strings.HasSuffix(s, `\$`):
			s = s[1 : len(s)-1]
		case len(s) >= 4 && (strings.HasPrefix(s, `\(`) && strings.HasSuffix(s, `\)`) ||
			strings.HasPrefix(s, `\[`) && strings.HasSuffix(s, `\]`)):
			s = s[2 : len(s)-2]
		}
		if s == before {
			break
		}
	}
	return strings.TrimSpace(s)
}

// trimClosingPunct drops sentence punctuation at the end of s, but keeps an ellipsis.
func trimClosingPunct(s string) string {
	for len(s) > 0 && !strings.HasSuffix(s, "...") {
		switch s[len(s)-1] {
		case '.', ',', ';', ':', ' ', '\t', '\n', '\r':
			s = s[:len(s)-1]
			continue
		}
		break
	}
	return s
}

// fromStatement finds the last "answer" marker followed by ':', 'is', '=' or a line break
// (a heading such as "**Final Answer**") and returns what it announces.
func fromStatement(text string) (string, bool) {
	best := -1
	var bestRest string
	for _, kw := range []string{"answer", "correct option", "correct choice"} {
		if i, rest, ok := lastMarker(text, kw); ok && i > best {
			best, bestRest = i, rest
		}
	}
	if i, a, ok := gsmMarker(text); ok && i > best {
		return a, true
	}
	for _, kw := range [...]string{"答案是", "答案为", "答案：", "答案:"} {
		if i := strings.LastIndex(text, kw); i > best {
			best, bestRest = i, strings.TrimLeft(text[i+len(kw):], ":： ")
		}
	}
	if best < 0 {
		return "", false
	}
	return statementContent(bestRest)
}

// gsmMarker reads a GSM8K-style last line "#### 42" when what follows is a plain number.
func gsmMarker(text string) (int, string, bool) {
	i := strings.LastIndex(text, "####")
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

// lastMarker finds the last kw that is followed by ':', 'is', '=' or a heading line break.
func lastMarker(text, kw string) (int, string, bool) {
	end := len(text)
	for tries := 0; tries < 64; tries++ {
		i := lastIndexFold(text[:end], kw)
		if i < 0 {
			return -1, "", false
		}
		end = i
		if i > 0 && isLetter(text[i-1]) {
			continue
		}
		k := i + len(kw)
		if k < len(text) && isLetter(text[k]) {
			continue // answers, answered
		}
		if rest, ok := markerRest(text, i, k); ok {
			return i, rest, true
		}
	}
	return -1, "", false
}

func skipMarks(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '*' || s[j] == '\t' || s[j] == '}' || s[j] == '_') {
		j++
	}
	return j
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
	}
	for _, ph := range [...]string{"is", "would be", "should be", "will be", "must be", "equals"} {
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

// headingBefore reports whether only markup and the word "final" precede position i on its line.
func headingBefore(text string, i int) bool {
	start := strings.LastIndexByte(text[:i], '\n') + 1
	pre := strings.TrimSpace(strings.Trim(text[start:i], "*#_ \t"))
	pre = strings.TrimSpace(strings.TrimSuffix(strings.ToLower(pre), "final"))
	pre = strings.Trim(pre, "*#_ \t")
	return pre == ""
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
		"can", "cannot", "does", "doesn't":
		return true
	}
	return false
}

func statementContent(rest string) (string, bool) {
	s := strings.TrimLeft(rest, " \t")
	if strings.HasPrefix(s, "\n") || strings.HasPrefix(s, "\r") {
		s = strings.TrimLeft(s, " \t\r\n")
	}
	if m, ok := leadingMath(s); ok {
		a := cleanAnswer(m)
		return a, a != ""
	}
	line := s
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	line = cutSentence(line)
	line = cutExplanation(line)
	a := cleanAnswer(line)
	// "The largest $n$ is 34." announces 34.
	if len(a) > 0 && isLetter(a[0]) {
		if p := strings.LastIndex(a, " is "); p >= 0 {
			a = cleanAnswer(a[p+len(" is "):])
		}
	}
	if !answerLike(a) {
		return "", false
	}
	return a, true
}

// cutExplanation drops a trailing justification: "5 because ...", "5 (since ...)".
func cutExplanation(line string) string {
	low := strings.ToLower(line)
	cut := len(line)
	for _, m := range [...]string{" i hope", " because", " since", ", which", ", as ", ", so ", "; ", " (since", " (as", " (because", " (from", " (which"} {
		if k := strings.Index(low, m); k > 0 && k < cut {
			cut = k
		}
	}
	return line[:cut]
}

// leadingMath returns the content of a $...$, $$...$$, \(...\) or \[...\] span at the start of s.
func leadingMath(s string) (string, bool) {
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
				return body[:k], true
			}
		}
		return "", false
	}
	return "", false
}

// cutSentence ends the line at the first sentence end outside $...$.
func cutSentence(line string) string {
	inMath := false
	for k := 0; k < len(line); k++ {
		switch line[k] {
		case '\\':
			k++
		case '$':
			inMath = !inMath
		case '.':
			if !inMath && (k+1 == len(line) || line[k+1] == ' ' || line[k+1] == '\t') {
				return line[:k]
			}
		}
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
	lfw := strings.ToLower(fw)
	if isStopWord(lfw) || ((lfw == "a" || lfw == "an") && len(fw) < len(a)) {
		return false
	}
	if strings.ContainsAny(a, "0123456789\\$^=/()") {
		return true
	}
	return len(strings.Fields(a)) <= 4
}
