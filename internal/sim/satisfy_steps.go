package sim

import (
	"regexp"
	"strconv"
)

// shownStep is a step of a solution as a judge reading the satisfy prompt
// sees it: where it starts in the solution and the number it goes by.
type shownStep struct {
	at int // byte offset in the solution
	n  int // the number the judge would name it by
}

var (
	// reStepTag is a step tag the satisfy template wraps each step in.
	reStepTag = regexp.MustCompile(`<step n="(-?\d+)">`)
	// reWrittenHeader is a "### Step N:" header as the student wrote it.
	reWrittenHeader = regexp.MustCompile(`(?m)^[ \t]*#{2,4}[ \t]*Step[ \t]+(\d+)[ \t]*:`)
)

// shownSteps reads the steps of a solution as a model does: by the numbers
// of the <step n="K"> tags when the prompt shows them, else by the number
// written in each "### Step N:" header, however the student numbered them
// (from 0, with gaps, starting over). The judge names a step by that
// number, not by counting.
func shownSteps(sol string) []shownStep {
	re := reStepTag
	if !re.MatchString(sol) {
		re = reWrittenHeader
	}
	var out []shownStep
	for _, m := range re.FindAllStringSubmatchIndex(sol, -1) {
		n, err := strconv.Atoi(sol[m[2]:m[3]])
		if err != nil {
			continue
		}
		out = append(out, shownStep{at: m[0], n: n})
	}
	return out
}

// stepAt is the number of the step whose text holds byte offset at: the
// last step starting before it, 0 (the whole solution) before the first.
func stepAt(steps []shownStep, at int) int {
	n := 0
	for _, s := range steps {
		if s.at > at {
			break
		}
		n = s.n
	}
	return n
}
