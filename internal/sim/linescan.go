package sim

import "strings"

// The simulated endpoint reads every judge prompt for its response block
// and its numbered criteria. A multi-line regular expression anchored at
// line starts is matched at every position of a prompt of several
// kilobytes; these scans look at line starts only, and give the indexes
// the expressions would (linescan_test.go checks them against the
// expressions).

// boundaryOpen finds the first line of p that is a block's opening line,
// "[KIND <16 lowercase hex digits>]" and then only spaces or tabs: the
// indexes of the line's start and of the end of its spaces or tabs, then
// of the id. It reports false when p has no such line.
func boundaryOpen(p, kind string) (m [4]int, ok bool) {
	prefix := "[" + kind + " "
	for from := 0; from <= len(p); {
		i := strings.Index(p[from:], prefix)
		if i < 0 {
			return m, false
		}
		i += from
		from = i + 1
		if i > 0 && p[i-1] != '\n' {
			continue
		}
		id := i + len(prefix)
		end := id + 16
		if end >= len(p) || !lowerHex(p[id:end]) || p[end] != ']' {
			continue
		}
		end++
		for end < len(p) && (p[end] == ' ' || p[end] == '\t') {
			end++
		}
		if end < len(p) && p[end] != '\n' {
			continue
		}
		return [4]int{i, end, id, id + 16}, true
	}
	return m, false
}

// lowerHex reports whether s is made of the digits 0-9 and a-f only.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// groundedCriterionLines are the submatch indexes in p of
// reGroundedCriterion's matches, as FindAllStringSubmatchIndex gives them
// but for where a match ends: at the end of its line's trailing white
// space, never past the line (the expression's \s* can run on over lines
// that are white space only, which no caller reads). Only a line that
// starts with a digit and holds "[id: " is matched.
func groundedCriterionLines(p string) [][]int {
	var out [][]int
	for start := 0; start < len(p); {
		end := strings.IndexByte(p[start:], '\n')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		line := p[start:end]
		if line != "" && line[0] >= '0' && line[0] <= '9' && strings.Contains(line, "[id: ") {
			if loc := reGroundedCriterion.FindStringSubmatchIndex(line); loc != nil {
				for k := range loc {
					loc[k] += start
				}
				out = append(out, loc)
			}
		}
		start = end + 1
	}
	return out
}
