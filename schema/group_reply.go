package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// Group judging (a job's judge.group, rewardd --judge-group): one request
// asks the judge about every response of a group, each shown in its own
// block under a name (R1, R2, ... in the order shown), and the reply gives
// one line per name: the name, a colon and that response's reply as the
// single-response judge writes it (a JSON array of satisfaction verdicts;
// a JSON object of grounded scores). The parsers below map the lines back
// to the responses by name. A reply that does not give every name exactly
// once, names one that was not shown, or whose line for any response does
// not parse, is refused whole: no verdict is taken from a broken reply,
// and the caller asks about each response alone instead.

// reGroupLine opens a response's line of a group reply: its name and a
// colon at the start of a line.
var reGroupLine = regexp.MustCompile(`(?m)^[ \t]*(R\d+)[ \t]*:`)

// splitGroupReply cuts reply into each response's part: names[i] is the
// name response i was shown under, and the part is the text after its
// name's colon up to the next name (text before the first name is left
// out).
func splitGroupReply(reply string, names []string) ([]string, error) {
	index := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := index[n]; dup {
			return nil, fmt.Errorf("schema: group reply: the name %s was given to two responses", n)
		}
		index[n] = i
	}
	parts := make([]string, len(names))
	seen := make([]bool, len(names))
	locs := reGroupLine.FindAllStringSubmatchIndex(reply, -1)
	for k, loc := range locs {
		name := reply[loc[2]:loc[3]]
		i, ok := index[name]
		if !ok {
			return nil, fmt.Errorf("the reply names a response %s that was not shown (there were %d)", name, len(names))
		}
		if seen[i] {
			return nil, fmt.Errorf("the reply gives response %s twice", name)
		}
		end := len(reply)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		parts[i], seen[i] = strings.TrimSpace(reply[loc[1]:end]), true
	}
	for i, n := range names {
		if !seen[i] {
			return nil, fmt.Errorf("the reply gives nothing for response %s: want one line per response, each of the %d names once, its name, a colon and its verdicts", n, len(names))
		}
	}
	return parts, nil
}

// ParseGroupSatisfaction reads a group satisfaction reply (the
// satisfy_group template's contract): names[i] is the name response i was
// shown under, judged[i] its text, steps[i] its number of steps (0: not
// checked). Each response's line is read by ParseSatisfactionOf against
// every response of the group, so a verdict any of them holds is its quote,
// not the judge's. The verdicts are by response, in ids' order.
func ParseGroupSatisfaction(reply string, names, judged []string, ids []int32, steps []int) ([][]Satisfaction, error) {
	if len(judged) != len(names) || len(steps) != len(names) {
		return nil, fmt.Errorf("schema: ParseGroupSatisfaction: %d names, %d texts and %d step counts", len(names), len(judged), len(steps))
	}
	parts, err := splitGroupReply(reply, names)
	if err != nil {
		return nil, err
	}
	all := strings.Join(judged, "\n")
	out := make([][]Satisfaction, len(names))
	for i, part := range parts {
		if out[i], err = ParseSatisfactionOf(part, all, ids, steps[i]); err != nil {
			return nil, fmt.Errorf("response %s: %w", names[i], err)
		}
	}
	return out, nil
}

// ParseGroupGroundedScores reads a grounded group reply (the
// score_grounded_group template's contract): names[i] is the name response
// i was shown under and judged[i] its text. Each response's line is read by
// ParseGroundedScoresOf with criteria, against every response of the group
// (scores any of them holds are its quote, not the judge's). The scores are
// by response.
func ParseGroupGroundedScores(reply string, names, judged []string, criteria []Criterion) ([]GroundedScores, error) {
	if len(judged) != len(names) {
		return nil, fmt.Errorf("schema: ParseGroupGroundedScores: %d names and %d texts", len(names), len(judged))
	}
	parts, err := splitGroupReply(reply, names)
	if err != nil {
		return nil, err
	}
	all := strings.Join(judged, "\n")
	out := make([]GroundedScores, len(names))
	for i, part := range parts {
		if out[i], err = ParseGroundedScoresOf(part, all, criteria); err != nil {
			return nil, fmt.Errorf("response %s: %w", names[i], err)
		}
	}
	return out, nil
}
