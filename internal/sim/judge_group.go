package sim

import (
	"regexp"
	"strings"
)

// reGroupSolution opens a solution of a group judge prompt (the
// satisfy_group template): its name on a line of its own, then (the second
// group) its final answer's line and its block's boundary line;
// reGroupResponse a response of a grounded one (score_grounded_group). A
// response cannot write the boundary line (the prompt escapes it), so
// what it writes cannot pass for another response's start.
var (
	reGroupSolution = regexp.MustCompile(`(?m)^Solution (R\d+)\n((?:Final answer extracted from the solution: .*\n)?\[solution [0-9a-f]{16}\])$`)
	reGroupResponse = regexp.MustCompile(`(?m)^Response (R\d+)\n(\[response [0-9a-f]{16}\])$`)
)

// satisfyGroup answers a group judge prompt as the satisfaction judge
// answers each of its solutions alone: it reads every solution's block
// with the problem and the rubric before the first, gives each the
// verdicts satisfy gives it in a prompt of its own (so group and single
// judging agree, but for what a profiled judge does to either), and
// writes one line per solution, "NAME: [...]". A solution the judge fails
// on makes the whole reply unusable; a malformed attempt breaks one line.
func (s *Server) satisfyGroup(model, prompt string, sampling uint64, r *rng, malformed bool) string {
	return answerGroup(prompt, reGroupSolution, func(one string, k, n int) string {
		reply := s.satisfyAt(model, one, sampling, r, false, true, lateness(k, n))
		if malformed && k == n-1 && reply != unusableReply {
			reply = breakJSON(reply, r)
		}
		return reply
	})
}

// scoreGroundedGroup answers a grounded group judge prompt as the grounded
// judge answers each of its responses alone (scoreGrounded), one line per
// response, "NAME: {...}"; a response the judge fails on makes the whole
// reply unusable, and a malformed attempt makes one of a judge's mistakes
// on the last line.
func (s *Server) scoreGroundedGroup(model, prompt string, r *rng, malformed bool) string {
	return answerGroup(prompt, reGroupResponse, func(one string, k, n int) string {
		return s.scoreGroundedAt(model, one, r, malformed && k == n-1, true, lateness(k, n))
	})
}

// answerGroup writes the reply to a group prompt whose responses open with
// a name line matched by re (its first group the name, its second where the
// response's own part starts): for each response, the prompt before the
// first response and that response's part taken as a single prompt,
// answered by one (the response shown k-th of n); unusableReply when any
// is.
func answerGroup(prompt string, re *regexp.Regexp, one func(single string, k, n int) string) string {
	locs := re.FindAllStringSubmatchIndex(prompt, -1)
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
		reply := one(shared+prompt[loc[4]:end], k, len(locs))
		if reply == unusableReply {
			return unusableReply
		}
		b.WriteString(prompt[loc[2]:loc[3]])
		b.WriteString(": ")
		b.WriteString(reply)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// lateness is 0 for the response shown first of n (or alone), rising
// linearly to 1 for the last: 1 - firstness.
func lateness(k, n int) float64 { return 1 - firstness(k, n) }
