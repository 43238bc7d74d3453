package verify

import (
	"strings"
	"unicode/utf8"
)

// maxExtractLen bounds the text Extract looks at: only the last MiB of a solution is read.
const maxExtractLen = 1 << 20

// How an answer was found, as [ExtractMethod] and [Result].Extraction name it.
const (
	ByTag          = "tag"           // <answer>...</answer>
	ByBox          = "boxed"         // \boxed{...} or \fbox{...}
	ByStatement    = "statement"     // "The final answer is ...", "Answer: ...", "答案是 ..."
	ByLastSentence = "last_sentence" // the value stated in the final sentence, as a last resort
	ByLeadLetter   = "lead_letter"   // a choice letter that opens the solution before its reason
)

// Options is what is known of a solution beyond its text.
type Options struct {
	// FinishReason is the endpoint's finish_reason for the text, "" when it is unknown.
	// "length" (the token limit; "max_tokens" on some servers) and "content_filter" say the
	// text was cut off before the model ended it: no answer is taken from it, whatever it
	// holds. Any other reason ("stop", "eos", ...) says the model (or a stop sequence) ended
	// it: no cut-off is guessed, only an unfinished answer (a box, math span or bracket never
	// closed) gives nothing. When it is unknown and no end token follows the text, a text is
	// cut off when it visibly stops mid-way: inside a math span ($, $$, \[, \(), a \boxed{ or
	// a bracket never closed, or in a final sentence with no full stop that stops on a word
	// that needs what follows or, after its value, opens what it never finishes ("so after
	// 12 turns the total"). A cut-off text gives the answer it clearly gave before the cut (a
	// tag, a box, a statement), unless the text after it takes it up again ("Wait, let me
	// check"). Either way a <think> never closed gives no answer unless an answer tag follows
	// it or the text ends on a box announced as the answer.
	FinishReason string
}

// CutOffBy reports whether a finish reason says the text was cut off before the model
// ended it: "length", "max_tokens" or "content_filter".
func CutOffBy(finishReason string) bool {
	switch finishReason {
	case "length", "max_tokens", "content_filter":
		return true
	}
	return false
}

// Extract returns the final answer of a model solution; see [ExtractMethod].
func Extract(text string) (answer string, ok bool) {
	a, _, ok := ExtractMethod(text)
	return a, ok
}

// ExtractMethod returns the final answer of a model solution and how it was found, when how
// the text ended is not known: [ExtractWith] with no finish reason. It looks for the last
// marker of any kind, whichever comes last in the text: an <answer>...</answer> tag (an
// answer tag that is never closed runs to the end of the text, as a stop sequence leaves it),
// a \boxed{...} or \fbox{...} (boxes that end the solution together, "\boxed{1} and
// \boxed{2}", make one list answer), or an explicit final-answer statement in English or
// another language ("The final answer is 7", "Answer: 7", "**Final Answer**" over a math
// block, "Réponse : 3,5", "答案是 7", a GSM8K "#### 7" line). Chat-template tokens end the text
// ("<|im_end|>" and what follows), and doubly escaped LaTeX is read once unescaped.
//
// When there is no marker at all, a choice letter that opens the solution before its reason
// ("B. Option A overlooks the overlap.") is the answer, method "lead_letter". Else the last
// resort is the value stated in the final sentence ("..., so the ordered pair is (3, 4)."),
// method "last_sentence": never an earlier sentence, never a value in a negated or hedged
// clause ("not 5", "maybe 5", "if it were 5"). A final sentence without its full stop is read
// like any other unless it visibly stops mid-sentence. A bare answer is not a sentence and
// gives ok=false. A line that opens another problem ("Question:", "Problem 2.") after a
// given answer ends the text.
//
// A text that visibly stops mid-way was cut off (see [Options]): it gives the answer it
// clearly gave before the cut, unless the text after that answer takes it up again, and
// otherwise ok=false. A <think> that is never closed and has no <answer> tag after it gives
// ok=false (the text never left its reasoning), unless the text ends on a box announced as the
// answer ("**Final Answer**\n\boxed{5}"), whatever the finish reason.
func ExtractMethod(text string) (answer, method string, ok bool) {
	return ExtractWith(text, Options{})
}

// ExtractWith is [ExtractMethod] told what is known of the text (see [Options]): with a
// finish reason, the reason alone says whether the text was cut off.
func ExtractWith(text string, opt Options) (answer, method string, ok bool) {
	x := extract(text, opt)
	return x.answer, x.method, x.cut == "" && x.method != ""
}

// extraction is what extract found: the answer and how, or why the text counts as cut off.
type extraction struct {
	answer, method string
	cut            string // why no answer may be taken from the text; "" when it was not cut off
}

func extract(text string, opt Options) extraction {
	if CutOffBy(opt.FinishReason) {
		return extraction{cut: "cut off (finish_reason " + opt.FinishReason + ")"}
	}
	if len(text) > maxExtractLen {
		text = text[len(text)-maxExtractLen:]
		for len(text) > 0 && !utf8.RuneStart(text[0]) {
			text = text[1:]
		}
	}
	text, ended := cutTurn(text)
	text = cutAtNewProblem(dropCalculatorNotes(unescapeLatex(text)))
	const inThink = "the text never leaves its <think> reasoning"
	thinkOpen := unclosedThink(text)
	unknown := opt.FinishReason == ""
	// guess: nothing tells how the text ended (no finish reason, no end token after it), so a
	// final sentence that visibly stops mid-way is taken as cut off.
	guess := unknown && !ended
	// How the text ends is read at most once, when a check needs it.
	end := lazyEnd{text: text}
	why := ""
	if unknown {
		// A solution that stops inside math or a bracket, or says it goes on, was cut off; a
		// bare answer with a stray "$" ("\frac{1}{2}$") is read as it is.
		// (The byte searches skip reading the end of a text that cannot stop inside either.)
		switch {
		case hasAnyByte(text, `$\`) && end.get().openAt >= 0:
			why = "the text stops inside a math span"
		case hasAnyByte(text[max(0, len(text)-maxSentenceLen):], "([{") && bracketOpenAtEnd(end.get()):
			why = "the text stops inside a bracket"
		case saysContinued(text):
			why = "the text says it continues"
		}
		if why != "" && !isProse(textHead(text, 4096)) {
			why = ""
		}
	}
	best, tagEnd := -1, -1
	var found candidate
	if c, ok := fromTag(text); ok {
		best, found, tagEnd = c.pos, c, c.end
	}
	// A box or a statement inside the tag is the tag's own content, so only the text after
	// the tag is searched for them.
	from := max(tagEnd, 0)
	if c, ok := fromBoxed(text, from); ok && c.pos > best && c.pos >= tagEnd {
		best, found = c.pos, c
	}
	if c, ok := fromStatement(text, from); ok && c.pos > best && c.pos >= tagEnd && (found.method != ByBox || !found.ok || strongStatement(c.answer)) {
		best, found = c.pos, c
	}
	if best >= 0 {
		if !found.ok {
			return extraction{cut: "the answer stops inside math, a box or a bracket"}
		}
		// Cut off after a clearly given answer: the answer stands unless what follows takes
		// it up again or it is part of the formula that was cut off. (A text that takes its
		// answer up again and stops mid-sentence, or on a word with no full stop, was cut off.)
		if why != "" {
			te := end.get()
			if r := takenBack(text, found, te.openAt >= 0, te.openAt); r != "" {
				return extraction{cut: r}
			}
		} else if tail := answerTail(text, found); guess && strings.TrimSpace(tail) != "" &&
			(unfinishedEnd(end.get()) || stopsOnWord(end.get())) && reopens(tail) {
			return extraction{cut: reopenedCut}
		}
		if thinkOpen && !endsWithBox(text, found) {
			return extraction{cut: inThink}
		}
		return extraction{answer: found.answer, method: found.method}
	}
	if why != "" {
		return extraction{cut: why}
	}
	if thinkOpen {
		return extraction{cut: inThink}
	}
	if a, ok := leadLetter(text); ok {
		return extraction{answer: a, method: ByLeadLetter}
	}
	if a, ok := fromLastSentence(text, end.get(), guess); ok {
		return extraction{answer: a, method: ByLastSentence}
	}
	return extraction{}
}

// hasAnyByte reports whether s holds any of the bytes of set, with one vectorised search per
// byte (strings.ContainsAny reads byte by byte).
func hasAnyByte(s, set string) bool {
	for i := 0; i < len(set); i++ {
		if strings.IndexByte(s, set[i]) >= 0 {
			return true
		}
	}
	return false
}

// lazyEnd reads how a text ends ([readEnd]) the first time a check asks.
type lazyEnd struct {
	text string
	te   textEnd
	done bool
}

func (l *lazyEnd) get() textEnd {
	if !l.done {
		l.te, l.done = readEnd(l.text), true
	}
	return l.te
}

// textHead is the first n bytes of text at most, cut at a rune's start.
func textHead(text string, n int) string {
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

// candidate is one marker's answer: where the marker stands, what it announces, and ok=false
// when the marker holds no usable answer (an unclosed box).
type candidate struct {
	pos    int
	end    int // where the answer ends: a tag's content, the last box, a statement's sentence
	answer string
	method string
	ok     bool
}

// strongStatement reports whether a statement's answer may override an earlier box: it holds
// a number or math, or it is at most two words ("Monday", "no solution").
func strongStatement(a string) bool {
	return strings.ContainsAny(a, "0123456789\\$^=/()") || len(strings.Fields(a)) <= 2
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

func fromTag(text string) (candidate, bool) {
	i := lastIndexFold(text, "<answer>")
	if i < 0 {
		return candidate{}, false
	}
	content := text[i+len("<answer>"):]
	end := len(text)
	if j := indexFold(content, "</answer>"); j >= 0 {
		content = content[:j]
		end = i + len("<answer>") + j
	}
	if c, found := fromBoxed(content, 0); found {
		return candidate{pos: i, end: end, answer: c.answer, method: ByTag, ok: c.ok}, true
	}
	if c, ok := fromStatement(content, 0); ok {
		return candidate{pos: i, end: end, answer: c.answer, method: ByTag, ok: true}, true
	}
	if closed := end < len(text); !closed && bracketsOpen(content) {
		return candidate{pos: i, end: end, method: ByTag}, true // "<answer>(3, 5": cut off inside the answer
	}
	if isProse(content) {
		if a, ok := fromLastSentence(content, readEnd(content), false); ok {
			return candidate{pos: i, end: end, answer: a, method: ByTag, ok: true}, true // "<answer>The total is 42</answer>"
		}
	}
	a := cleanAnswer(content)
	if a == "" {
		return candidate{}, false
	}
	return candidate{pos: i, end: end, answer: a, method: ByTag, ok: true}, true
}

// lastBox finds the last \boxed or \fbox in text: its start and the length of its name.
func lastBox(text string) (int, int) {
	i := lastIndex(text, `\boxed`)
	name := len(`\boxed`)
	if j := lastIndex(text[i+1:], `\fbox`); j >= 0 {
		i, name = i+1+j, len(`\fbox`)
	}
	return i, name
}

// lastIndex is strings.LastIndex for a short marker. It reads windows from the end of s with
// strings.Index, which is vectorised where strings.LastIndex goes byte by byte, so a text
// without the marker costs a fraction of one byte-by-byte pass.
func lastIndex(s, sub string) int {
	const window = 4096
	end := len(s)
	for end >= len(sub) {
		start := max(end-window, 0)
		w := s[start:end]
		last := strings.Index(w, sub)
		if last >= 0 {
			for j := strings.Index(w[last+1:], sub); j >= 0; j = strings.Index(w[last+1:], sub) {
				last += 1 + j
			}
			return start + last
		}
		if start == 0 {
			break
		}
		end = start + len(sub) - 1 // a marker across the window's start
	}
	return -1
}

// boxAt reads the box whose name starts at i: its cleaned content, the index after it, and
// whether it is closed.
func boxAt(text string, i, name int) (string, int, bool) {
	j := i + name
	if j < len(text) && isLetter(text[j]) {
		return "", j, false
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	if j >= len(text) {
		return "", j, false
	}
	if text[j] == '{' {
		c, end, closed := braced(text, j)
		return cleanAnswer(c), end, closed
	}
	k := j
	for k < len(text) && text[k] != ' ' && text[k] != '\n' && text[k] != '$' && text[k] != '\t' {
		k++
	}
	return cleanAnswer(text[j:k]), k, true
}

// fromBoxed reads the last box that starts at or after from.
func fromBoxed(text string, from int) (candidate, bool) {
	i, name := lastBox(text[from:])
	if i < 0 {
		return candidate{}, false
	}
	i += from
	if j := i + name; j < len(text) && isLetter(text[j]) {
		return candidate{}, false // \boxedsomething is another command
	}
	a, end, closed := boxAt(text, i, name)
	if !closed || a == "" {
		return candidate{pos: i, method: ByBox}, true
	}
	if percentAfter(text[end:]) && !strings.Contains(a, "%") {
		a += `\%` // \boxed{25}\%, \boxed{25} percent
	}
	// Boxes that end the solution together ("\boxed{-2} and \boxed{1}", "x_1 = \boxed{1}, x_2 =
	// \boxed{2}", "\boxed{5} for part (a) and \boxed{7}") hold one answer between them.
	parts := []string{a}
	start := i
	for len(parts) < 8 {
		k, kname := lastBox(text[:start])
		if k < 0 {
			break
		}
		prev, end, closed := boxAt(text, k, kname)
		if !closed || prev == "" || end > start || !connectorGap(text[end:start]) {
			break
		}
		parts = append(parts, prev)
		start = k
	}
	return candidate{pos: i, end: end, answer: joinParts(parts), method: ByBox, ok: true}, true
}

// endsWithBox reports whether c is a closed box that ends the text, announced as the answer:
// nothing after it but spaces, a full stop, and the math or bold it sits in ("$\boxed{5}$.",
// "\[\boxed{5}\]"), and "final answer", "answer is" or "answer:" just before it. A <think>
// that is never closed but ends so ("**Final Answer**\n\boxed{5}") gave its answer: models
// that answer inside their reasoning write it this way. A box that only ends the text ("The
// sum should be \boxed{42}") is still a draft.
func endsWithBox(text string, c candidate) bool {
	if c.method != ByBox || !c.ok || strings.Trim(text[c.end:], " \t\r\n.$*\\])") != "" {
		return false
	}
	lead := strings.ToLower(text[max(0, c.pos-announceWindow):c.pos])
	return strings.Contains(lead, "final answer") || strings.Contains(lead, "answer is") || strings.Contains(lead, "answer:")
}

// announceWindow is how far before a box endsWithBox looks for the words that announce it.
const announceWindow = 40

// joinParts joins box contents found last to first into one list, dropping repeats.
func joinParts(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	var uniq []string
	for k := len(parts) - 1; k >= 0; k-- {
		dup := false
		for _, u := range uniq {
			dup = dup || u == parts[k]
		}
		if !dup {
			uniq = append(uniq, parts[k])
		}
	}
	return strings.Join(uniq, ", ")
}

// connectorGap reports whether the text between two boxes only joins them: separators,
// "and", part labels such as "for part (a)", and labels such as "x_2 =".
func connectorGap(gap string) bool {
	if len(gap) > 80 {
		return false
	}
	for _, w := range strings.FieldsFunc(gap, gapSeparator) {
		if !connectorWord(w) {
			return describingGap(gap)
		}
	}
	return true
}

// describingGap reports words between two boxes that name what each box holds and join them:
// "\boxed{2} and the larger root is \boxed{3}", "\boxed{3} apples and \boxed{5}". It needs a
// joining "and" or comma, at most eight words, no number and no word of a revision
// ("\boxed{2}, but after checking, the answer is \boxed{3}").
func describingGap(gap string) bool {
	if strings.ContainsAny(gap, "0123456789.!?") {
		return false
	}
	words := strings.FieldsFunc(gap, gapSeparator)
	joined := strings.ContainsAny(gap, ",;，；")
	if len(words) > 8 {
		return false
	}
	for _, w := range words {
		lw := strings.ToLower(w)
		switch lw {
		case "and", "et", "y", "und", "和", "以及":
			joined = true
		case "but", "however", "wait", "actually", "after", "check", "checking", "checked", "recheck", "rechecking",
			"correct", "corrected", "correction", "instead", "again", "mistake", "error", "wrong", "so", "thus",
			"therefore", "hence", "final", "finally", "then", "no", "not", "oops", "hmm", "redo", "recount",
			"recompute", "recalculate", "sorry", "earlier", "previous", "above", "first", "initially", "later",
			"update", "updated", "fix", "fixed", "realize", "realized", "mean", "meant", "rather", "or":
			return false
		}
		if isHedge(lw) {
			return false
		}
	}
	return joined
}

func gapSeparator(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '$', ',', ';', '.', ':', '=', '&', '{', '}', '(', ')', '~', '，', '；', '、', '*':
		return true
	}
	return false
}

func connectorWord(w string) bool {
	switch strings.ToLower(w) {
	case "and", "or", "for", "part", "parts", "the", "answer", "answers", "respectively", "both",
		"et", "y", "und", "和", "及", "或", "与", "以及", "quad", "qquad", "text", "mathrm", "textbf", "also":
		return true
	}
	if strings.HasPrefix(w, `\`) {
		return connectorWord(strings.TrimLeft(w, `\`)) || w == `\` || w == `\\` || w == `\(` || w == `\)` ||
			w == `\[` || w == `\]`
	}
	return shortLabel(w)
}

// cleanAnswer trims math delimiters, bold marks and closing punctuation around an answer.
func cleanAnswer(s string) string {
	for range 4 {
		before := s
		s = strings.TrimSpace(s)
		s = strings.TrimSuffix(s, "**")
		s = strings.TrimPrefix(s, "**")
		s = trimClosingPunct(s)
		switch {
		case len(s) >= 4 && strings.HasPrefix(s, "$$") && strings.HasSuffix(s, "$$"):
			s = s[2 : len(s)-2]
		case len(s) >= 2 && s[0] == '$' && s[len(s)-1] == '$' && !strings.HasSuffix(s, `\$`) && !strings.Contains(s[1:len(s)-1], "$"):
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
		trimmed := false
		for _, p := range [...]string{"。", "！", "，", "।", "؟", "۔", "．"} {
			if strings.HasSuffix(s, p) {
				s, trimmed = s[:len(s)-len(p)], true
			}
		}
		if !trimmed {
			break
		}
	}
	return s
}

// shortLabel reports part labels and symbol labels between boxes: a, ii, iv, 1, x_2, x_{2}, AB.
func shortLabel(w string) bool {
	switch strings.ToLower(w) {
	case "i", "ii", "iii", "iv", "v", "vi":
		return true
	}
	letters := 0
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case isLetter(c):
			letters++
		case isDigit(c), c == '_', c == '{', c == '}', c == '\'':
		default:
			return false
		}
	}
	return len(w) <= 6 && letters <= 2
}

// percentAfter reports a percent sign or word right after a box: "\%", "%", " percent",
// " per cent", " pct".
func percentAfter(s string) bool {
	s = strings.TrimLeft(s, " $")
	if strings.HasPrefix(s, `\%`) || strings.HasPrefix(s, "%") || strings.HasPrefix(s, "％") {
		return true
	}
	for _, w := range [...]string{"percent", "per cent", "pct", "per cento", "por ciento", "pour cent", "prozent"} {
		if hasPrefixFold(s, w) && (len(s) == len(w) || !isLetter(s[len(w)])) {
			return true
		}
	}
	return false
}
