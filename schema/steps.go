package schema

import "strings"

// IsStepHeader reports whether line starts with a step header: after spaces
// or tabs, two to four '#', optional spaces, "Step", at least one space, a
// number, optional spaces and ':' (the rollout template's "### Step N:").
// It is the one rule every package finds steps by: the reward's step spans,
// the step tags the satisfaction judge is shown, and the pipeline's step
// count. The number is the student's and says nothing about the step's
// position: responses number from 0, skip numbers or start over.
func IsStepHeader(line string) bool {
	i := skipBlank(line, 0)
	hashes := 0
	for i < len(line) && line[i] == '#' {
		i++
		hashes++
	}
	if hashes < 2 || hashes > 4 {
		return false
	}
	i = skipBlank(line, i)
	if !strings.HasPrefix(line[i:], "Step") {
		return false
	}
	i += len("Step")
	j := skipBlank(line, i)
	if j == i {
		return false
	}
	digits := j
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	if j == digits {
		return false
	}
	j = skipBlank(line, j)
	return j < len(line) && line[j] == ':'
}

func skipBlank(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// CountSteps counts the step header lines of text (IsStepHeader).
func CountSteps(text string) int {
	n := 0
	for line := range strings.Lines(text) {
		if IsStepHeader(line) {
			n++
		}
	}
	return n
}
