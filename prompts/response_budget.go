package prompts

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A judge is shown a response within a budget of estimated tokens
// (View.MaxResponseTokens; rewardd's --judge-max-response-tokens, a job
// file's empirical.max_response_tokens): a server that truncates a prompt
// too long for its context judges only its head (a late flaw unseen) or
// loses its beginning (the rubric), so a longer response is shown head and
// tail, half the budget each, with a line in place of its middle saying
// how much was left out. The judge of a cut response is told nothing else;
// what its verdicts pay is the caller's rule (package judge counts every
// pitfall as present in a cut response: what the judge could not see may
// hold it).

// DefaultJudgeMaxResponseTokens is the default response budget: with a
// 32K-token judge, room beside it for the instructions, the rubric or the
// passage (4,096 by default) and the judge's reply.
const DefaultJudgeMaxResponseTokens = 16384

// MinJudgeMaxResponseTokens is the smallest response budget accepted:
// below it a judge would see too little of a response to grade it.
const MinJudgeMaxResponseTokens = 256

// fitResponse is where response is cut to maxTokens estimated tokens: the
// bytes from to to are left out (from == to == len(response) when it
// fits or maxTokens < 1), and what is shown.
func fitResponse(response string, maxTokens int) (from, to int, shown Shown) {
	total := utf8.RuneCountInString(response)
	if maxTokens < 1 || EstimateTokens(response) <= maxTokens {
		return len(response), len(response), Shown{Chars: total, ShownChars: total}
	}
	// The note's numbers are at most as long as total's digits.
	room := max(maxTokens*bytesPerToken-len(responseNote("solution", total, total)), 0)
	from = len(CutHead(response, room/2))
	to = max(tailStart(response, room-room/2), from)
	hidden := utf8.RuneCountInString(response[from:to])
	return from, to, Shown{Cut: true, HiddenFrom: from, HiddenTo: to, Chars: total, ShownChars: total - hidden}
}

// note is the line shown in place of the left-out middle of a response of
// kind ("solution", "response"); "" when nothing was cut.
func (s Shown) note(kind string) string {
	if !s.Cut {
		return ""
	}
	return responseNote(kind, s.Chars-s.ShownChars, s.Chars)
}

func responseNote(kind string, hidden, total int) string {
	return fmt.Sprintf("[... %d characters of the %s are left out here (it has %d): it is longer than the judge is shown, so its beginning and its end are shown ...]", hidden, kind, total)
}

// tailStart is the byte offset where the end of s within maxBytes bytes
// starts: after the first paragraph break, line break or white space in
// the first quarter of the room, else at the first character boundary.
func tailStart(s string, maxBytes int) int {
	if maxBytes <= 0 {
		return len(s)
	}
	if len(s) <= maxBytes {
		return 0
	}
	start := len(s) - maxBytes
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	window := s[start:min(len(s), start+maxBytes/4)]
	for _, sep := range []string{"\n\n", "\n"} {
		if i := strings.Index(window, sep); i >= 0 {
			return start + i + len(sep)
		}
	}
	if i := strings.IndexFunc(window, unicode.IsSpace); i >= 0 {
		_, w := utf8.DecodeRuneInString(window[i:])
		return start + i + w
	}
	return start
}
