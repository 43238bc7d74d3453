package source

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A blob is data written as text: a data URI (an image inlined into
// Markdown or HTML) or a run of base64. It holds nothing to ask a question
// about, and can be megabytes long, so the cutter never packs one with
// text: a blob is a passage of its own (the image's markup with it), which
// the run leaves out before any request, naming what it held; the text
// around it is cut as if the blob were a paragraph between. The
// document's analysis reads a short note in its place.

// minBase64Word is the shortest word read as base64 data, and the least
// data a data URI holds to be a blob (an elided example such as
// "data:image/png;base64,iVBORw ...." is text); minBase64Run the fewest
// characters a run of such words needs to be a blob, so that a key or a
// hash quoted in prose stays text.
const (
	minBase64Word = 40
	minBase64Run  = 256
)

// blobRange is one blob: src[start:end], from the start of a word to the
// end of one.
type blobRange struct{ start, end int }

// blobRuns finds the blobs of src[lo:hi]: data-URI words (with the markup
// around them), and runs of words of the base64 alphabet, each at least
// minBase64Word long but a short last one (the end of wrapped data), that
// hold minBase64Run characters and mix upper and lower case letters and
// digits, as encoded binary data does (a hex digest, one case, does not).
func blobRuns(src string, lo, hi int) []blobRange {
	if !strings.Contains(src[lo:hi], "base64,") && !hasBase64Word(src[lo:hi]) {
		return nil
	}
	var out []blobRange
	run := blobRange{-1, -1}
	var uri bool
	var mix charMix
	flush := func() {
		if run.start >= 0 && (uri || run.end-run.start >= minBase64Run && mix.all()) {
			out = append(out, run)
		}
		run, uri, mix = blobRange{-1, -1}, false, charMix{}
	}
	for s, e := nextWord(src, lo, hi); s < hi; s, e = nextWord(src, e, hi) {
		w := src[s:e]
		isURI := isDataURIWord(w)
		long := !isURI && isBase64Word(w)
		switch {
		case isURI:
			s, e = markupAround(src, s, e, lo, hi)
			if len(out) > 0 && s < out[len(out)-1].end { // markup reaching back into the last blob
				s = out[len(out)-1].end
			}
		case long:
		case run.start >= 0 && !uri && base64Chars(w) == len(w): // the short last word of wrapped data
			mix.add(w)
			run.end = e
			flush()
			continue
		default:
			flush()
			continue
		}
		if run.start < 0 || s < run.start {
			run.start = s
		}
		run.end = e
		uri = uri || isURI
		mix.add(w)
	}
	flush()
	return out
}

// charMix notes which kinds of base64 characters a run holds.
type charMix struct{ upper, lower, digit bool }

func (m *charMix) add(w string) {
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= 'A' && c <= 'Z':
			m.upper = true
		case c >= 'a' && c <= 'z':
			m.lower = true
		case c >= '0' && c <= '9':
			m.digit = true
		}
	}
}

func (m charMix) all() bool { return m.upper && m.lower && m.digit }

// base64Chars counts the leading bytes of w in the base64 alphabet.
func base64Chars(w string) int {
	for i := 0; i < len(w); i++ {
		if !isBase64Byte(w[i]) {
			return i
		}
	}
	return len(w)
}

// hasBase64Word: a quick look for a word long enough to be base64.
func hasBase64Word(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if isBase64Byte(s[i]) {
			if n++; n >= minBase64Word {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

// nextWord is the next word of src[from:hi]: [s, e) of non-space runes;
// s == hi when there is none.
func nextWord(src string, from, hi int) (int, int) {
	s := from
	for s < hi {
		r, size := utf8.DecodeRuneInString(src[s:])
		if !unicode.IsSpace(r) {
			break
		}
		s += size
	}
	e := s
	for e < hi {
		r, size := utf8.DecodeRuneInString(src[e:])
		if unicode.IsSpace(r) {
			break
		}
		e += size
	}
	return s, e
}

func isBase64Byte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=' || c == '-' || c == '_'
}

// isBase64Word: a word (quotes and brackets around it aside) of at least
// minBase64Word characters of the base64 alphabet; whether a run of them is
// data is decided over the run (blobRuns).
func isBase64Word(w string) bool {
	w = strings.Trim(w, `"'()[]{}<>,;`)
	return len(w) >= minBase64Word && base64Chars(w) == len(w)
}

// dataURI finds a base64 data URI in w holding at least minBase64Word
// characters of data: its media type and where it starts.
func dataURI(w string) (mediaType string, at int) {
	for off := 0; ; {
		i := strings.Index(w[off:], "data:")
		if i < 0 {
			return "", -1
		}
		i += off
		rest := w[i+len("data:"):]
		if j := strings.Index(rest, ";base64,"); j >= 0 && !strings.ContainsAny(rest[:j], "\"'()<> ") && base64Chars(rest[j+len(";base64,"):]) >= minBase64Word {
			mt, _, _ := strings.Cut(rest[:j], ";")
			if mt == "" {
				mt = "text/plain"
			}
			return strings.ToLower(mt), i
		}
		off = i + len("data:")
	}
}

func isDataURIWord(w string) bool { _, at := dataURI(w); return at >= 0 }

// markupAround widens the data-URI word src[s:e] to the Markdown image or
// link ("![alt](data:...)") or the HTML tag ("<img src=data:...>") it sits
// in, on its line and within 300 bytes either way, to whole words within
// [lo, hi).
func markupAround(src string, s, e, lo, hi int) (int, int) {
	from := max(lo, strings.LastIndexByte(src[:s], '\n')+1, s-300)
	to := min(hi, e+300)
	if k := strings.IndexByte(src[e:to], '\n'); k >= 0 {
		to = e + k
	}
	_, at := dataURI(src[s:e])
	uri := s + at
	if strings.HasSuffix(src[from:uri], "](") { // Markdown: from the '[' of the alt text to the ')'
		if open := strings.LastIndexByte(src[from:uri-2], '['); open >= 0 && !strings.Contains(src[from+open+1:uri-2], "]") {
			s = min(s, from+open)
		}
		if !strings.Contains(src[uri:e], ")") {
			if k := strings.IndexByte(src[e:to], ')'); k >= 0 {
				e += k + 1
			}
		}
	} else if open := strings.LastIndexByte(src[from:uri], '<'); open >= 0 && !strings.Contains(src[from+open:uri], ">") { // HTML: the tag
		s = min(s, from+open)
		if !strings.Contains(src[uri:e], ">") {
			if k := strings.IndexByte(src[e:to], '>'); k >= 0 {
				e += k + 1
			}
		}
	}
	for s > lo {
		r, size := utf8.DecodeLastRuneInString(src[:s])
		if unicode.IsSpace(r) {
			break
		}
		s -= size
	}
	return s, wordEnd(src, e, hi)
}

// wordEnd is the end of the word that src[:e] ends inside, within hi.
func wordEnd(src string, e, hi int) int {
	for e < hi {
		r, size := utf8.DecodeRuneInString(src[e:])
		if unicode.IsSpace(r) {
			break
		}
		e += size
	}
	return e
}

// blobReason says what a blob passage holds, for the run's record of what
// it left out: "a data-URI image (image/png, 200,033 characters): not
// text", "base64 data (4,194,304 characters): not text".
func blobReason(text string) string {
	n := groupDigits(utf8.RuneCountInString(text))
	if mt, at := dataURI(text); at >= 0 {
		kind := "a data-URI file"
		if strings.HasPrefix(mt, "image/") {
			kind = "a data-URI image"
		}
		return fmt.Sprintf("%s (%s, %s characters): not text", kind, mt, n)
	}
	return fmt.Sprintf("base64 data (%s characters): not text", n)
}

// overLimitReason says why a passage over the limit (one that holds a
// word longer than a passage may be) is left out.
func overLimitReason(text string, limit int) string {
	longest := 0
	for _, w := range strings.Fields(text) {
		longest = max(longest, utf8.RuneCountInString(w))
	}
	if longest > limit {
		return fmt.Sprintf("one word of %s characters, longer than grounded.passage_chars %d: a passage is cut at white space only, and this is no text to ask about", groupDigits(longest), limit)
	}
	return fmt.Sprintf("%s characters, over grounded.passage_chars %d: its headings and first word cannot be cut apart", groupDigits(utf8.RuneCountInString(text)), limit)
}

// groupDigits writes n with thousands separators: 200,033.
func groupDigits(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// isolateBlobs splits an atom's spans so that every blob among them is
// spans of its own, marked (span.blob); the packer puts blob spans only
// with each other.
func isolateBlobs(src string, spans []span) []span {
	if len(spans) == 0 {
		return spans
	}
	runs := blobRuns(src, spans[0].start, spans[len(spans)-1].end)
	if len(runs) == 0 {
		return spans
	}
	var out []span
	r := 0
	for _, sp := range spans {
		s, cost := sp.start, sp.cost
		for s < sp.end && r < len(runs) && runs[r].start < sp.end {
			run := runs[r]
			bs, be := max(run.start, s), min(run.end, sp.end)
			if pre := trimEnd(src, s, bs); pre > s {
				out = append(out, span{start: s, end: pre, cost: cost})
				cost = costCutWord
			} else {
				bs = s // only white space before it: the blob keeps its line's indentation
			}
			out = append(out, span{start: bs, end: trimEnd(src, bs, be), cost: cost, blob: true})
			cost = costCutWord
			if run.end > sp.end {
				s = sp.end // the blob goes on in the next span
				break
			}
			s = skipGap(src, run.end)
			r++
		}
		if s < sp.end {
			out = append(out, span{start: s, end: sp.end, cost: cost})
		}
	}
	return out
}

// withoutBlobs is text with every blob of the passages cut from it
// replaced by a note of what it was, for the document's analysis.
func withoutBlobs(text string, cuts []passageCut) string {
	var b strings.Builder
	at := 0
	for _, c := range cuts {
		if !c.Blob {
			continue
		}
		b.WriteString(text[at:c.Start])
		fmt.Fprintf(&b, "[%s, left out]", strings.TrimSuffix(blobReason(text[c.Start:c.End]), ": not text"))
		at = c.End
	}
	if at == 0 {
		return text
	}
	b.WriteString(text[at:])
	return b.String()
}
