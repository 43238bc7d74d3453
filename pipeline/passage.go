package pipeline

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// CutPassages cuts a document into passages of at most limit characters
// (runes) for the grounded style. Paragraphs (separated by blank lines) are
// packed whole into a passage while they fit, joined by a blank line. A
// paragraph longer than the limit is cut at sentence ends; a sentence longer
// than the limit at white space. A cut never falls inside a word, so a
// passage is longer than the limit only when it is a single word that is.
// Passages are trimmed and never empty; a blank document has none.
func CutPassages(text string, limit int) []string {
	limit = max(limit, 1)
	var out []string
	var cur strings.Builder
	curLen := 0
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
			curLen = 0
		}
	}
	for _, para := range paragraphs(text) {
		n := utf8.RuneCountInString(para)
		switch {
		case n > limit:
			flush()
			out = append(out, cutParagraph(para, limit)...)
		case cur.Len() > 0 && curLen+2+n > limit:
			flush()
			fallthrough
		default:
			if cur.Len() > 0 {
				cur.WriteString("\n\n")
				curLen += 2
			}
			cur.WriteString(para)
			curLen += n
		}
	}
	flush()
	return out
}

// paragraphs splits text at blank lines, trimming each paragraph's ends and
// normalizing line ends to \n.
func paragraphs(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if p := strings.TrimSpace(cur.String()); p != "" {
			out = append(out, p)
		}
		cur.Reset()
	}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if cur.Len() > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(strings.TrimRight(line, " \t\r"))
	}
	flush()
	return out
}

// cutParagraph cuts a paragraph longer than limit at the last sentence end
// that keeps a piece within the limit, else at the last white space, else
// (one word longer than the limit) after that word.
func cutParagraph(p string, limit int) []string {
	var out []string
	for p != "" {
		if !longerThan(p, limit) {
			out = append(out, p)
			break
		}
		end := lastCut(p, limit, isSentenceEnd)
		if end <= 0 {
			end = lastCut(p, limit, isWordEnd)
		}
		if end <= 0 {
			end = strings.IndexFunc(p, unicode.IsSpace)
			if end < 0 {
				end = len(p)
			}
		}
		out = append(out, strings.TrimSpace(p[:end]))
		p = strings.TrimLeftFunc(p[end:], unicode.IsSpace)
	}
	return out
}

// longerThan reports whether s has more than n runes, looking at no more
// than n+1 of them (a long paragraph is asked at every cut).
func longerThan(s string, n int) bool {
	for i := range s {
		if n == 0 {
			return i < len(s)
		}
		n--
	}
	return false
}

// lastCut is the largest byte offset i, with p[:i] at most limit runes
// long, where p[i] is white space and at(p, i) holds; 0 when there is none.
func lastCut(p string, limit int, at func(p string, i int) bool) int {
	maxB := len(p)
	n := 0
	for i := range p {
		if n == limit {
			maxB = i
			break
		}
		n++
	}
	for i := maxB; i > 0; {
		if i < len(p) {
			if r, _ := utf8.DecodeRuneInString(p[i:]); unicode.IsSpace(r) && at(p, i) {
				return i
			}
		}
		_, size := utf8.DecodeLastRuneInString(p[:i])
		i -= size
	}
	return 0
}

// isWordEnd: the rune before white space at i is not white space.
func isWordEnd(p string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(p[:i])
	return !unicode.IsSpace(r)
}

// isSentenceEnd: white space at i follows ".", "!" or "?", possibly behind
// closing quotes or brackets, and the word before is not a one-letter
// abbreviation ("e.g.", "J.").
func isSentenceEnd(p string, i int) bool {
	j := i
	for j > 0 {
		r, size := utf8.DecodeLastRuneInString(p[:j])
		if !strings.ContainsRune(`)]"'”’»`, r) {
			break
		}
		j -= size
	}
	r, size := utf8.DecodeLastRuneInString(p[:j])
	if r != '.' && r != '!' && r != '?' {
		return false
	}
	if r == '.' {
		before := p[:j-size]
		k := strings.LastIndexFunc(before, func(r rune) bool { return unicode.IsSpace(r) || r == '.' })
		if utf8.RuneCountInString(before[k+1:]) == 1 {
			return false
		}
	}
	return true
}

// ContentHash is the content hash of a passage (the record's doc_hash): 16
// hex digits of xxhash64 over its trimmed text.
func ContentHash(text string) string {
	return fmt.Sprintf("%016x", xxhash.Sum64String(strings.TrimSpace(text)))
}
