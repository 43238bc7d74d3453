package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// The grounded reward judge (template score_grounded, seed 001 appendix D)
// as a model reading the prompt answers it: it finds the numbered criteria
// with their ids and weights, reads the response, and gives each criterion
// the share of its expected keywords and required elements the response
// mentions, in half points, capped at the weight; the reply is the JSON
// object the prompt asks for, sometimes in a fence or after a sentence, its
// total rounded to two decimals. A malformed attempt makes one of the
// mistakes real judges make: criteria keyed by their list number instead of
// their id, the total given as a fraction of 1, a criterion over its weight,
// max_total as 10 or 100, a criterion left out, or the reply cut short.
//
// A test that needs exact scores writes [ScoresMarker] into the response;
// [JudgeFailsMarker] makes every reply about it, repairs included, unusable.

// markScores, followed by id=score pairs and "]", e.g. "[sim:scores
// c1=2,c3=0.5]", gives those criteria exactly those scores and every other
// criterion 0. A score may exceed the weight: the judge then repeats it,
// which the parser rejects.
const markScores = "[sim:scores "

// ScoresMarker is the marker that, written into a response, makes the
// simulated grounded judge give the criteria these scores (every criterion
// not named 0).
func ScoresMarker(scores map[string]float64, ids ...string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + "=" + strconv.FormatFloat(scores[id], 'g', -1, 64)
	}
	return markScores + strings.Join(parts, ",") + "]"
}

// groundedCriterion is one criterion as the judge prompt lists it.
type groundedCriterion struct {
	Number   int
	ID       string
	Weight   float64
	Keywords []string // expected keywords and required elements
}

var reGroundedCriterion = regexp.MustCompile(`(?m)^(\d+)\. \[id: ([^\]\n]*)\] .* \(weight ([0-9.eE+-]+)\)\s*$`)

// parseGroundedCriteria reads the numbered criteria of a judge prompt.
func parseGroundedCriteria(p string) []groundedCriterion {
	locs := groundedCriterionLines(p)
	out := make([]groundedCriterion, 0, len(locs))
	for k, loc := range locs {
		end := len(p)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		n, _ := strconv.Atoi(p[loc[2]:loc[3]])
		w, _ := strconv.ParseFloat(p[loc[6]:loc[7]], 64)
		c := groundedCriterion{Number: n, ID: p[loc[4]:loc[5]], Weight: w}
		for line := range strings.Lines(p[loc[1]:end]) {
			line = strings.TrimSpace(line)
			for _, field := range []string{"Expected keywords:", "Required elements:"} {
				if rest, ok := strings.CutPrefix(line, field); ok {
					c.Keywords = append(c.Keywords, listItems(rest)...)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// listItems splits a "; "-joined list line; "(none)" is empty.
func listItems(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" || s == "(none)" {
		return nil
	}
	var out []string
	for _, x := range strings.Split(s, ";") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// groundedJudged is the response of a grounded judge prompt and its
// criteria, read as a model that trusts what looks like structure reads
// them (cutJudged): the criteria outside the response's section, a later
// definition of an id taking the place of an earlier one.
func groundedJudged(p string) (string, []groundedCriterion) {
	jt, ok := cutJudged(p, "response")
	if !ok {
		return "", latestCriteria(parseGroundedCriteria(p))
	}
	return jt.section, latestCriteria(parseGroundedCriteria(jt.outside))
}

// latestCriteria is criteria with a repeated id taking the place of its
// earlier definition.
func latestCriteria(cs []groundedCriterion) []groundedCriterion {
	at := map[string]int{}
	out := cs[:0:0]
	for _, c := range cs {
		if k, ok := at[c.ID]; ok {
			out[k] = c
			continue
		}
		at[c.ID] = len(out)
		out = append(out, c)
	}
	return out
}

// groundedScore is what the judge gives one criterion for response: the
// share of its keywords the response mentions, in half points of the
// weight; a criterion without keywords gets half its weight when the
// response says anything.
func groundedScore(c groundedCriterion, response string) float64 {
	lower := strings.ToLower(response)
	share := 0.0
	switch {
	case len(c.Keywords) > 0:
		hit := 0
		for _, k := range c.Keywords {
			if strings.Contains(lower, strings.ToLower(k)) {
				hit++
			}
		}
		share = float64(hit) / float64(len(c.Keywords))
	case strings.TrimSpace(response) != "":
		share = 0.5
	}
	return min(c.Weight, math.Round(c.Weight*share*2)/2)
}

// markedScores reads a [sim:scores ...] marker; ok is false without one.
func markedScores(response string) (map[string]float64, bool) {
	i := strings.Index(response, markScores)
	if i < 0 {
		return nil, false
	}
	body := response[i+len(markScores):]
	end := strings.IndexByte(body, ']')
	if end < 0 {
		return nil, false
	}
	out := map[string]float64{}
	for _, pair := range strings.Split(body[:end], ",") {
		id, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if f, err := strconv.ParseFloat(v, 64); ok && err == nil {
			out[id] = f
		}
	}
	return out, true
}

// orderedScores is a JSON object of scores in the order given (a model
// writes them in the prompt's order).
type orderedScores struct {
	keys []string
	vals []float64
}

func (o orderedScores) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteString(": ")
		b.WriteString(strconv.FormatFloat(o.vals[i], 'g', -1, 64))
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

type groundedReplyJSON struct {
	Scores    orderedScores `json:"scores"`
	Total     float64       `json:"total"`
	MaxTotal  float64       `json:"max_total"`
	Reasoning string        `json:"reasoning"`
}

func (s *Server) scoreGrounded(model, prompt string, r *rng, malformed, jsonMode bool) string {
	return s.scoreGroundedAt(model, prompt, r, malformed, jsonMode, 0)
}

// scoreGroundedAt is scoreGrounded for a response shown at lateness late
// of a group request (see satisfyAt): a judge with a late_lenience profile
// gives a criterion its full weight with that chance times late.
func (s *Server) scoreGroundedAt(model, prompt string, r *rng, malformed, jsonMode bool, late float64) string {
	response, criteria := groundedJudged(prompt)
	jp := s.judgeOf(model)
	if strings.Contains(response, JudgeFailsMarker) || s.judgeFails(model, jp, "grounded-score", response) {
		return unusableReply
	}
	marked, exact := markedScores(response)
	reply := groundedReplyJSON{Scores: orderedScores{keys: make([]string, 0, len(criteria)), vals: make([]float64, 0, len(criteria))}}
	var met []string
	for _, c := range criteria {
		sc := groundedScore(c, response)
		if exact {
			sc = marked[c.ID]
		}
		if s.flips(model, jp, "grounded-score", response, c.ID) {
			sc = flippedScore(sc, c.Weight)
		}
		if sc < c.Weight && s.lenientAt(model, jp, late, response, c.ID) {
			sc = c.Weight
		}
		reply.Scores.keys = append(reply.Scores.keys, c.ID)
		reply.Scores.vals = append(reply.Scores.vals, sc)
		reply.Total += sc
		reply.MaxTotal += c.Weight
		if sc >= c.Weight && c.Weight > 0 {
			met = append(met, c.ID)
		}
	}
	reply.Total = math.Round(reply.Total*100) / 100
	reply.Reasoning = fmt.Sprintf("The response fully meets %d of the %d criteria", len(met), len(criteria))
	if len(met) > 0 {
		reply.Reasoning += " (" + strings.Join(met, ", ") + ")"
	}
	reply.Reasoning += "; the others are partly met or missing."
	if malformed {
		return groundedMistake(reply, criteria, r)
	}
	raw, _ := json.Marshal(reply)
	if !jsonMode && r.chance(0.1) {
		return "Here is my evaluation of the response against each criterion.\n\n" + string(raw)
	}
	return marshalOrFence(json.RawMessage(raw), r, jsonMode)
}

// groundedMistake writes the reply with one of the mistakes real judges
// make with this contract.
func groundedMistake(reply groundedReplyJSON, criteria []groundedCriterion, r *rng) string {
	switch r.intn(6) {
	case 0: // criteria keyed by their list number
		for k := range reply.Scores.keys {
			reply.Scores.keys[k] = strconv.Itoa(criteria[k].Number)
		}
	case 1: // the total as a fraction of 1
		if reply.MaxTotal > 0 {
			reply.Total = math.Round(reply.Total/reply.MaxTotal*100) / 100
			reply.MaxTotal = 1
		}
	case 2: // a criterion scored on a 0-10 scale
		if len(reply.Scores.vals) > 0 {
			reply.Scores.vals[0] = 10
		}
	case 3: // max_total on a scale of its own
		reply.MaxTotal = 100
	case 4: // a criterion left out
		if n := len(reply.Scores.keys); n > 1 {
			reply.Scores.keys, reply.Scores.vals = reply.Scores.keys[:n-1], reply.Scores.vals[:n-1]
		}
	default: // cut short
		raw, _ := json.Marshal(reply)
		return string(raw[:len(raw)/2])
	}
	raw, _ := json.Marshal(reply)
	return string(raw)
}

// flippedScore is a score turned to its opposite: 0 to the weight, any
// other score to 0.
func flippedScore(sc, weight float64) float64 {
	if sc == 0 {
		return weight
	}
	return 0
}
