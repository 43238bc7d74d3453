package server

import "strings"

// problemTags wrap the problem in the toolkit's rollout template, which a
// verl export uses as the prompt: the problem sits between them, in the
// middle of the format instructions, so no run of whole lines at the
// text's start or end is the problem alone.
const (
	problemOpen  = "<problem>"
	problemClose = "</problem>"
)

// taggedProblems are the texts between problem tags in text, last first.
func taggedProblems(text string) []string {
	var out []string
	for rest := text; ; {
		i := strings.Index(rest, problemOpen)
		if i < 0 {
			break
		}
		rest = rest[i+len(problemOpen):]
		j := strings.Index(rest, problemClose)
		if j < 0 {
			break
		}
		out = append([]string{rest[:j]}, out...)
		rest = rest[j+len(problemClose):]
	}
	return out
}
