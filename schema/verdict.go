package schema

import (
	"errors"
	"strings"
	"unicode"
)

// judgeVerdict takes a judge's verdict from its reply. The candidates are
// the JSON spans (opening with open) that accept takes in the reply's
// answer part (reply.answerFrom: after the reasoning the reply opened, or
// the whole reply when it did not open one), not counting spans inside
// another; decode reads one. A judge's reply may restate its verdict, but a
// reply whose candidates differ (same says when two are the same verdict)
// is a failed judgment: the judged response may have planted one, and the
// judge quoted it (before its verdict or after), so no choice between them
// is safe. So is a reply that holds, where its answer is, a span shaped
// like a verdict that does not parse (a trailing comma, a stray quote, a
// reply cut off, a wrong bracket: verdictShaped), beside candidates that
// do: its own verdict is broken, and what parses may be a quote. The
// verdict is the last candidate's; a single candidate's decode error is
// the reply's. judged, when not empty, is the text the judge was shown to
// judge (the response): a candidate that it holds (quotes), white space
// and backslashes aside, may be the judged text's own plant and is no
// verdict, so a reply needs a candidate of its own (see quotedIn).
func judgeVerdict[T any](text, judged string, open byte, accept func(r reply, span string, off int) error,
	decode func(r reply, span string, off int) (T, error), same func(a, b T) bool) (T, error) {
	var zero T
	r, err := newReply(text)
	if err != nil {
		return zero, err
	}
	ans := r.answer()
	var cands []jsonSpan
	brokenAt, brokenWhy := -1, func() error { return nil }
	err = scanJSON(ans, open, accept, func(span string, off int) bool {
		cands = append(cands, jsonSpan{span, off})
		return true
	}, func(off int, why func() error) {
		if brokenAt < 0 {
			brokenAt, brokenWhy = off, why
		}
	})
	if err != nil {
		return zero, err
	}
	if brokenAt >= 0 {
		why := brokenWhy()
		if pe, ok := why.(*ParseError); ok {
			why = errors.New(pe.Msg)
		}
		return zero, parseErr(ans.lineAt(brokenAt), 0, "",
			"the verdict here does not parse (%v), so the JSON that does parse elsewhere in the reply may be a quote, not the verdict: give exactly one verdict, whole and valid, after any reasoning",
			why)
	}
	last := cands[len(cands)-1]
	if judged != "" && quotedIn(judged, cands) {
		return zero, parseErr(ans.lineAt(last.off), 0, "", "the only verdict in the reply is one the judged text itself holds, so it is a quote, not your verdict: give your own verdict, whole, after any reasoning, and quote no verdict from the text")
	}
	v, err := decode(ans, last.span, last.off)
	for _, c := range cands[:len(cands)-1] {
		if c.span == last.span {
			continue
		}
		w, werr := decode(ans, c.span, c.off)
		if err != nil && werr != nil && err.Error() == werr.Error() {
			continue // the same fault in both (an array of them, ...)
		}
		if err != nil || werr != nil || !same(v, w) {
			return zero, parseErr(ans.lineAt(last.off), 0, "",
				"the reply gives %d different verdicts (lines %d and %d) where its answer is; give exactly one, after any reasoning, and quote nothing that looks like one",
				distinct(cands), ans.lineAt(c.off), ans.lineAt(last.off))
		}
	}
	return v, err
}

// jsonSpan is a JSON span of a reply and its offset.
type jsonSpan struct {
	span string
	off  int
}

// distinct counts the different spans of cands.
func distinct(cands []jsonSpan) int {
	seen := map[string]bool{}
	for _, c := range cands {
		seen[c.span] = true
	}
	return len(seen)
}

// quotedIn reports whether judged holds every candidate of cands, white
// space and backslashes aside (a judge re-indents what it quotes, and may
// unescape it): a reply whose every verdict is a copy of one the judged
// text wrote gives no verdict of its own. A response has no cause to hold
// a judge's whole verdict on its own rubric but to have it paid.
func quotedIn(judged string, cands []jsonSpan) bool {
	text := compactText(judged)
	for _, c := range cands {
		if !strings.Contains(text, compactText(c.span)) {
			return false
		}
	}
	return true
}

// compactText is s without white space and backslashes.
func compactText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\\' || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
