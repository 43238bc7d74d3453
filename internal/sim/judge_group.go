package sim

import (
	"regexp"
	"strings"
)

// reGroupSolution opens a solution of a group judge prompt (the
// satisfy_group template): its name on a line of its own.
var reGroupSolution = regexp.MustCompile(`(?m)^Solution (R\d+)\n`)

// satisfyGroup answers a group judge prompt as the satisfaction judge
// answers each of its solutions alone: it reads every solution's block
// with the problem and the rubric before the first, gives each the
// verdicts satisfy gives it in a prompt of its own (so group and single
// judging agree, but for what a profiled judge does to either), and
// writes one line per solution, "NAME: [...]". A solution the judge fails
// on makes the whole reply unusable; a malformed attempt breaks one line.
func (s *Server) satisfyGroup(model, prompt string, sampling uint64, r *rng, malformed bool) string {
	locs := reGroupSolution.FindAllStringSubmatchIndex(prompt, -1)
	if len(locs) == 0 {
		return unusableReply
	}
	shared := prompt[:locs[0][0]]
	var b strings.Builder
	for k, loc := range locs {
		end := len(prompt)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		one := shared + prompt[loc[1]:end] // the rubric, then this solution's answer line and block
		reply := s.satisfy(model, one, sampling, r, false, true)
		if reply == unusableReply {
			return unusableReply
		}
		if malformed && k == len(locs)-1 {
			reply = breakJSON(reply, r)
		}
		b.WriteString(prompt[loc[2]:loc[3]])
		b.WriteString(": ")
		b.WriteString(reply)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
