package sim

import (
	"regexp"
	"strings"
)

// A judge prompt shows the judged text (the satisfaction judge's
// "solution", the grounded judge's "response") in a section of its own.
// The simulated judge reads it as a model that trusts what looks like
// structure would: the section opens at the templates' boundary line
// "[KIND ID]" (or, in prompts from templates before blocks, a <KIND> tag)
// and ends at the first line "[end of KIND ID]" with the same id, or at
// the first thing that looks like a closing </KIND> tag, in any case and
// with spaces inside, whichever comes first. What lies outside the section
// is the prompt's own: its rubric items and criteria are read from there,
// a later definition of an id taking the place of an earlier one. So a
// response that can write an unescaped closing tag ends its section early
// (what follows it is not judged) and plants items or criteria; the
// templates' escaping and boundary ids are what stop it.

// judgedText is a prompt cut around its judged section.
type judgedText struct {
	section string // the judged text as this reader finds it
	outside string // the prompt without the section and its delimiters
}

// reCloseTag finds a closing tag as a loose reader takes it (a block's
// opening line is found by boundaryOpen).
var reCloseTag = map[string]*regexp.Regexp{
	"solution": regexp.MustCompile(`(?i)<\s*/\s*solution\s*>`),
	"response": regexp.MustCompile(`(?i)<\s*/\s*response\s*>`),
}

// cutJudged finds the judged section of kind in prompt p; ok is false
// when p has none.
func cutJudged(p, kind string) (judgedText, bool) {
	start, openAt, endLine := -1, -1, ""
	if m, ok := boundaryOpen(p, kind); ok {
		openAt, start = m[0], m[1]
		endLine = "[end of " + kind + " " + p[m[2]:m[3]] + "]"
	} else if i := strings.Index(p, "<"+kind+">"); i >= 0 {
		openAt, start = i, i+len(kind)+2
	} else {
		return judgedText{}, false
	}
	end, resume := len(p), len(p)
	if endLine != "" {
		if j := strings.Index(p[start:], endLine); j >= 0 {
			end, resume = start+j, start+j+len(endLine)
		}
	}
	if m := reCloseTag[kind].FindStringIndex(p[start:]); m != nil && start+m[0] < end {
		end, resume = start+m[0], start+m[1]
	}
	return judgedText{section: strings.TrimSpace(p[start:end]), outside: p[:openAt] + "\n" + p[resume:]}, true
}

// finalAnswerOf is the extracted final answer a satisfaction prompt shows
// outside the solution: on its "Final answer extracted from the
// solution:" line, else between <final_answer> tags.
func finalAnswerOf(outside string) string {
	const label = "Final answer extracted from the solution:"
	if i := strings.LastIndex(outside, label); i >= 0 {
		rest := outside[i+len(label):]
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		return strings.TrimSpace(rest)
	}
	final, _ := betweenLast(outside, "<final_answer>", "</final_answer>")
	return final
}

// latestItems is items with a repeated id taking the place of its earlier
// definition, in the order the ids first came.
func latestItems(items []item) []item {
	at := map[string]int{}
	out := items[:0:0]
	for _, it := range items {
		if k, ok := at[it.ID]; ok {
			out[k] = it
			continue
		}
		at[it.ID] = len(out)
		out = append(out, it)
	}
	return out
}
