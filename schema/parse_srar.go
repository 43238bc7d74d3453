package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultMaxItems is the SRaR item limit used when SRaROptions.MaxItems is 0.
const DefaultMaxItems = 12

// SRaROptions tunes ParseSRaR.
type SRaROptions struct {
	// MaxItems is the most items a rubric may have after duplicates are
	// dropped; 0 means DefaultMaxItems.
	MaxItems int
}

// SRaRResult is a parsed SRaR rubric.
type SRaRResult struct {
	Items []Item
	// Duplicates counts the items dropped because an earlier item had the
	// same type and the same text (after white space was collapsed).
	Duplicates int
}

var srarTypes = map[string]bool{TypeSuggest: true, TypePitfall: true, TypeBonus: true, TypeAnswer: true}

// ParseSRaR parses SRaR rubric lines, one item per line, each starting with a
// tag: "<<SUGGEST>>: text", "<<PITFALL>>: ...", "<<BONUS>>: ...",
// "<<ANSWER>>: ...".
//
// Tolerated, because real models emit them: tags in any case; single angle
// brackets (<SUGGEST>, the form SRaR's own data uses) and square brackets
// ([SUGGEST]); spaces inside the brackets; a missing colon; a list bullet or
// number before the tag ("- ", "* ", "+ ", "1. ", "1) ", "(1) "); bold or
// italic markers around the tag or the whole line (**<<SUGGEST>>**:); a
// closing tag of the same type at line end (<</SUGGEST>>), or alone on the
// next line after the item or at the end of its last line; code fence lines (``` or ```text, ~~~), blank
// lines and surrounding white space anywhere; a reasoning block ending in
// </think> before the rubric.
//
// A line without a tag directly after an item line continues that item: it
// is appended with a space, so a tag line with no text followed by its text on
// the next line also works. A line without a tag anywhere else (before the
// first tag, after a blank or fence line, after a closing tag) is an error,
// as is an unknown tag, a closing tag of another type, a second tag in the
// middle of a line, an item with no text, and invalid UTF-8.
//
// The rubric must have at least one SUGGEST, exactly one ANSWER and at most
// MaxItems items after exact duplicates (same type, same text after white
// space collapse) are dropped. Items get ids 1..n in order, weight 1 and the
// polarity of their type; their text has white space collapsed.
func ParseSRaR(text string, opt SRaROptions) (SRaRResult, error) {
	limit := opt.MaxItems
	if limit < 0 {
		return SRaRResult{}, fmt.Errorf("schema: ParseSRaR: MaxItems %d is negative", limit)
	}
	if limit == 0 {
		limit = DefaultMaxItems
	}
	r, err := newReply(text)
	if err != nil {
		return SRaRResult{}, err
	}
	if err := checkUTF8(r); err != nil {
		return SRaRResult{}, err
	}
	raw, err := scanSRaRLines(r)
	if err != nil {
		return SRaRResult{}, err
	}
	if len(raw) == 0 {
		return SRaRResult{}, parseErr(0, 0, "", "the reply has no rubric lines; each line must start with a tag such as <<SUGGEST>>:")
	}

	var res SRaRResult
	seen := make(map[string]bool, len(raw))
	var answerLines []int
	suggests := 0
	for _, it := range raw {
		key := it.typ + "\x00" + it.text
		if seen[key] {
			res.Duplicates++
			continue
		}
		seen[key] = true
		switch it.typ {
		case TypeSuggest:
			suggests++
		case TypeAnswer:
			answerLines = append(answerLines, it.line)
		}
		res.Items = append(res.Items, Item{
			ID:       int32(len(res.Items) + 1),
			Type:     it.typ,
			Text:     it.text,
			Weight:   1,
			Polarity: PolarityOf(it.typ),
		})
	}
	switch {
	case suggests == 0:
		return SRaRResult{}, parseErr(0, 0, "", "the rubric has no <<SUGGEST>> item; at least one is required")
	case len(answerLines) == 0:
		return SRaRResult{}, parseErr(0, 0, "", "the rubric has no <<ANSWER>> item; exactly one is required")
	case len(answerLines) > 1:
		return SRaRResult{}, parseErr(0, 0, "", "the rubric has %d different <<ANSWER>> items (lines %s); exactly one is required",
			len(answerLines), joinInts(answerLines))
	case len(res.Items) > limit:
		return SRaRResult{}, parseErr(0, 0, "", "the rubric has %d items; at most %d are allowed", len(res.Items), limit)
	}
	return res, nil
}

type rawItem struct {
	typ   string
	text  string
	line  int
	parts []string
}

// Scanner states between lines.
const (
	stNone   = iota // before the first item
	stOpen          // the last line belonged to an item: a plain line continues it
	stGap           // a blank or fence line followed the last item
	stClosed        // the last item was ended by a closing tag line
)

func scanSRaRLines(r reply) ([]rawItem, error) {
	var items []rawItem
	var cur *rawItem
	state := stNone
	first := r.lineAt(0)

	finish := func() error {
		if cur == nil {
			return nil
		}
		cur.text = collapseSpace(strings.Join(cur.parts, " "))
		cur.parts = nil
		if cur.text == "" {
			return parseErr(cur.line, len(items)+1, "", "the <<%s>> item has no text", cur.typ)
		}
		if err := checkMidTag(cur.text); err != nil {
			return &ParseError{Line: cur.line, Item: len(items) + 1, Msg: err.Error()}
		}
		items = append(items, *cur)
		cur = nil
		return nil
	}

	for i, rawLine := range strings.Split(r.body, "\n") {
		n := first + i
		line := strings.TrimSpace(rawLine)
		if line == "" || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			if state == stOpen {
				state = stGap
			}
			continue
		}
		tl, err := parseTagLine(line)
		if err != nil {
			return nil, &ParseError{Line: n, Msg: err.Error()}
		}
		switch tl.kind {
		case lineOpen:
			if err := finish(); err != nil {
				return nil, err
			}
			cur = &rawItem{typ: tl.typ, line: n, parts: []string{tl.text}}
			state = stOpen
			if tl.closed {
				state = stClosed
				if err := finish(); err != nil {
					return nil, err
				}
			}
		case lineClose:
			if cur == nil || state != stOpen {
				return nil, parseErr(n, 0, "", "closing tag %s does not follow an item", tl.tag)
			}
			if tl.typ != cur.typ {
				return nil, parseErr(n, 0, "", "closing tag %s does not match the open <<%s>> item", tl.tag, cur.typ)
			}
			if err := finish(); err != nil {
				return nil, err
			}
			state = stClosed
		case linePlain:
			switch state {
			case stNone:
				return nil, parseErr(n, 0, "", "text before the first rubric tag: %s; every line must start with a tag such as <<SUGGEST>>:", excerpt(line))
			case stOpen:
				text, closed, err := stripClosing(line, cur.typ, "", false)
				if err == nil {
					err = checkMidTag(text)
				}
				if err != nil {
					return nil, &ParseError{Line: n, Msg: err.Error()}
				}
				cur.parts = append(cur.parts, text)
				if closed {
					if err := finish(); err != nil {
						return nil, err
					}
					state = stClosed
				}
			default:
				return nil, parseErr(n, 0, "", "text outside a rubric item: %s; every item must be on lines that start with a tag, with no other text", excerpt(line))
			}
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return items, nil
}

const (
	linePlain = iota
	lineOpen
	lineClose
)

type tagLine struct {
	kind   int
	typ    string // upper case item type
	tag    string // the tag as written, for messages
	text   string
	closed bool // an open tag whose closing tag ends the same line
}

var (
	// A tag at the start of a line: <<NAME>>, <NAME>, [NAME], [[NAME]], with
	// an optional "/" for a closing tag.
	leadTagRE = regexp.MustCompile(`^(?:<{1,2}\s*(/?)\s*([A-Za-z_]{2,})\s*>{1,2}|\[{1,2}\s*(/?)\s*([A-Za-z_]{2,})\s*\]{1,2})`)
	// A closing tag at the end of a line.
	tailTagRE = regexp.MustCompile(`(?:<{1,2}\s*/\s*([A-Za-z_]{2,})\s*>{1,2}|\[{1,2}\s*/\s*([A-Za-z_]{2,})\s*\]{1,2})\s*$`)
	// A second opening tag followed by a colon in the middle of a line.
	midTagRE = regexp.MustCompile(`(?i)<<\s*(SUGGEST|PITFALL|BONUS|ANSWER)\s*>>\s*:`)
)

// parseTagLine classifies one trimmed, non-blank line. Errors carry no line;
// the caller adds it.
func parseTagLine(line string) (tagLine, error) {
	s := stripBullet(line)
	mark := leadingEmphasis(s)
	s = s[len(mark):]
	m := leadTagRE.FindStringSubmatch(s)
	if m == nil {
		return tagLine{kind: linePlain}, nil
	}
	slash, name := m[1], m[2]
	if m[4] != "" {
		slash, name = m[3], m[4]
	}
	tl := tagLine{tag: m[0], typ: strings.ToUpper(name)}
	if !srarTypes[tl.typ] {
		return tl, fmt.Errorf("unknown tag %s; the tags are <<SUGGEST>>, <<PITFALL>>, <<BONUS>> and <<ANSWER>>", m[0])
	}
	rest := s[len(m[0]):]
	markOpen := mark != ""
	if markOpen && strings.HasPrefix(rest, mark) {
		rest, markOpen = rest[len(mark):], false
	}
	rest = strings.TrimLeft(rest, " \t")
	if after, ok := strings.CutPrefix(rest, ":"); ok {
		rest = after
	} else if after, ok := strings.CutPrefix(rest, "："); ok {
		rest = after
	}
	if markOpen && strings.HasPrefix(strings.TrimLeft(rest, " \t"), mark) {
		rest, markOpen = strings.TrimLeft(rest, " \t")[len(mark):], false
	}
	rest = strings.TrimSpace(rest)

	rest, closed, err := stripClosing(rest, tl.typ, mark, markOpen)
	if err != nil {
		return tl, err
	}
	tl.closed = closed

	if slash == "/" {
		if rest != "" {
			return tl, fmt.Errorf("text after the closing tag %s", m[0])
		}
		tl.kind = lineClose
		return tl, nil
	}
	if err := checkMidTag(rest); err != nil {
		return tl, err
	}
	tl.kind = lineOpen
	tl.text = rest
	return tl, nil
}

// stripClosing removes closing tags of type typ (and a pending emphasis mark)
// from the end of s, and reports whether there were any. A closing tag of
// another type is an error.
func stripClosing(s, typ, mark string, markOpen bool) (string, bool, error) {
	closed := false
	for {
		var cm []int
		if strings.Contains(s, "/") {
			cm = tailTagRE.FindStringSubmatchIndex(s)
		}
		if cm != nil {
			var name string
			if cm[2] >= 0 {
				name = s[cm[2]:cm[3]]
			} else {
				name = s[cm[4]:cm[5]]
			}
			if !strings.EqualFold(name, typ) {
				return s, false, fmt.Errorf("closing tag %s does not match the open <<%s>> item", s[cm[0]:cm[1]], typ)
			}
			s = strings.TrimSpace(s[:cm[0]])
			closed = true
		}
		stripped := markOpen && strings.HasSuffix(s, mark)
		if stripped {
			s, markOpen = strings.TrimSpace(s[:len(s)-len(mark)]), false
		}
		if cm == nil && !stripped {
			return s, closed, nil
		}
	}
}

func checkMidTag(s string) error {
	if !strings.Contains(s, "<<") {
		return nil
	}
	if loc := midTagRE.FindStringIndex(s); loc != nil {
		return fmt.Errorf("a second tag %s in the middle of a line; put each item on its own line", strings.TrimRight(s[loc[0]:loc[1]], ": \t"))
	}
	return nil
}

// stripBullet removes a list marker ("- ", "* ", "+ ", "• ", "1. ", "1) ",
// "(1) ") from the start of s. A "*" counts only when followed by a space, so
// that bold markers stay.
func stripBullet(s string) string {
	rest := ""
	switch {
	case strings.HasPrefix(s, "- "), strings.HasPrefix(s, "+ "), strings.HasPrefix(s, "* "),
		strings.HasPrefix(s, "-\t"), strings.HasPrefix(s, "+\t"), strings.HasPrefix(s, "*\t"):
		rest = s[2:]
	case strings.HasPrefix(s, "-<"), strings.HasPrefix(s, "-["), strings.HasPrefix(s, "+<"), strings.HasPrefix(s, "+["):
		rest = s[1:]
	case strings.HasPrefix(s, "•"):
		rest = s[len("•"):]
	default:
		i := 0
		paren := strings.HasPrefix(s, "(")
		if paren {
			i = 1
		}
		j := i
		for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i || j >= len(s) {
			return s
		}
		switch {
		case paren && s[j] == ')':
		case !paren && (s[j] == '.' || s[j] == ')'):
		default:
			return s
		}
		rest = s[j+1:]
	}
	return strings.TrimLeft(rest, " \t")
}

// leadingEmphasis returns the run of up to three '*' or '_' that starts s.
func leadingEmphasis(s string) string {
	if s == "" || (s[0] != '*' && s[0] != '_') {
		return ""
	}
	i := 1
	for i < len(s) && i < 3 && s[i] == s[0] {
		i++
	}
	return s[:i]
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
