package pipeline

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	summaryUnits    = regexp.MustCompile(`(?m)^\w+: (\d+) unique of `)
	summaryDone     = regexp.MustCompile(`(?m)^  done (\d+) \((\d+) this session\), failed (\d+), left out by [\w ]+? (\d+), pending (\d+)$`)
	summaryByStage  = regexp.MustCompile(`(?m)^  failures by stage: (.+)$`)
	summaryKept     = regexp.MustCompile(`in the (\d+) kept \w+: `)
	summarySpent    = regexp.MustCompile(`spent \$([\d.]+) and (\d+) tokens over every session`)
	summaryRequests = regexp.MustCompile(`(?m)^requests: .*tokens (\d+) prompt \+ (\d+) completion; cost \$([\d.]+)`)
)

// summaryDisagreements lists the ways a run summary's figures contradict
// each other: done, failed, left out and pending that do not add up to the
// unique units; failures by stage that do not add up to the failures; kept
// problems other than the ones done; and, for a run of one session, a
// budget stop's spending other than the requests' cost and tokens.
func summaryDisagreements(text string) []string {
	var out []string
	n := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	d := summaryDone.FindStringSubmatch(text)
	if d == nil {
		return nil // not a summary with counts
	}
	done, session, failed, leftOut, pending := n(d[1]), n(d[2]), n(d[3]), n(d[4]), n(d[5])
	if u := summaryUnits.FindStringSubmatch(text); u != nil && done+failed+leftOut+pending != n(u[1]) {
		out = append(out, fmt.Sprintf("done %d + failed %d + left out %d + pending %d is not the %s unique", done, failed, leftOut, pending, u[1]))
	}
	if session > done {
		out = append(out, fmt.Sprintf("%d done this session of %d done", session, done))
	}
	if b := summaryByStage.FindStringSubmatch(text); b != nil {
		var sum int64
		for _, kv := range strings.Fields(b[1]) {
			if _, v, ok := strings.Cut(kv, "="); ok {
				sum += n(v)
			}
		}
		if sum != failed {
			out = append(out, fmt.Sprintf("failures by stage add up to %d, not the %d failed", sum, failed))
		}
	}
	if k := summaryKept.FindStringSubmatch(text); k != nil && n(k[1]) != done {
		out = append(out, fmt.Sprintf("%s kept, %d done", k[1], done))
	}
	s, r := summarySpent.FindStringSubmatch(text), summaryRequests.FindStringSubmatch(text)
	if s != nil && r != nil && session == done {
		if s[1] != r[3] {
			out = append(out, fmt.Sprintf("a run of one session spent $%s by its stop line and $%s by its requests", s[1], r[3]))
		}
		if n(s[2]) != n(r[1])+n(r[2]) {
			out = append(out, fmt.Sprintf("a run of one session used %s tokens by its stop line and %d by its requests", s[2], n(r[1])+n(r[2])))
		}
	}
	return out
}
