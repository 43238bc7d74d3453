package prompts

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A judge is shown the passage (its answer key) within a budget of
// estimated tokens, as seed 001's judge prompt truncates the grounding to
// fit the judge's context. The budget is set by the job file's
// grounded.judge_passage_tokens (distill run's validity judge and
// empirical stage) and rewardd's --judge-passage-tokens (its grounded
// scorer); both call FitPassage.

// DefaultJudgePassageTokens is the default judge passage budget: a passage
// of the default 6,000 characters fits with room to spare, and a 16K-token
// judge keeps about 12K tokens for the rubric, the answer and its reply.
const DefaultJudgePassageTokens = 4096

// MinJudgePassageTokens is the smallest budget accepted: below it a judge
// would see too little of any passage to grade against.
const MinJudgePassageTokens = 256

// bytesPerToken is the estimate FitPassage counts with: one token per 3
// bytes of UTF-8. It errs on the side of more tokens: English prose runs
// about 4 bytes a token, code and maths about 3, and a CJK character (3
// bytes) is about one token.
const bytesPerToken = 3

// EstimateTokens is the estimated token count of s that the judge passage
// budget is measured in (bytes/3, rounded up).
func EstimateTokens(s string) int { return (len(s) + bytesPerToken - 1) / bytesPerToken }

// FitPassage returns passage as a judge is shown it under a budget of
// maxTokens estimated tokens (EstimateTokens), and whether it was cut.
// A passage within the budget is returned unchanged. A longer one keeps
// its beginning, cut at the last paragraph break, else line break, else
// white space in the last quarter of the room, else at a character
// boundary (never inside a UTF-8 sequence), and ends with a line saying
// how much of it is shown; the whole result is within the budget. A
// maxTokens below 1 means no budget.
func FitPassage(passage string, maxTokens int) (string, bool) {
	if maxTokens < 1 || EstimateTokens(passage) <= maxTokens {
		return passage, false
	}
	total := utf8.RuneCountInString(passage)
	// The note's numbers are at most as long as total's digits, so its
	// length with total in both places bounds it.
	room := maxTokens*bytesPerToken - len(cutNote(total, total))
	if room <= 0 {
		return "", true
	}
	head := CutHead(passage, room)
	return head + cutNote(utf8.RuneCountInString(head), total), true
}

// CutHead is the beginning of s within maxBytes bytes: s itself when it
// fits, else cut after the last paragraph break, line break or white
// space in the last quarter of maxBytes, else at the last character
// boundary (never inside a UTF-8 sequence), trailing white space trimmed.
func CutHead(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	return strings.TrimRightFunc(s[:cutPoint(s, max(maxBytes, 0))], unicode.IsSpace)
}

// cutNote ends a cut passage: the judge is told the passage goes on.
func cutNote(shown, total int) string {
	return fmt.Sprintf("\n[... the passage is cut here to fit the judge's context: %d of its %d characters are shown]", shown, total)
}

// cutPoint is the byte offset, at most room, where a passage longer than
// room is cut: after the last paragraph break, line break or white space
// in the last quarter of the room, else at the last character boundary.
func cutPoint(s string, room int) int {
	end := room
	for end > 0 && end < len(s) && !utf8.RuneStart(s[end]) {
		end--
	}
	floor := end - end/4
	for _, sep := range []string{"\n\n", "\n"} {
		if i := strings.LastIndex(s[:end], sep); i >= floor && i > 0 {
			return i
		}
	}
	if i := strings.LastIndexFunc(s[:end], unicode.IsSpace); i >= floor && i > 0 {
		return i
	}
	return end
}
