package sim

import (
	"encoding/json"
	"strings"
)

const validReason = "The mathematics is sound, the item is specific to this problem, and its type fits what it says."

var invalidReasons = []string{
	"The item is too generic to be checked against a solution of this problem.",
	"The mathematics in the item does not match the conditions of the problem.",
	"The item's type does not fit what it describes.",
}

// verdict is the judge's deterministic opinion of one item: it depends only
// on the problem and the item, so single and batched judging agree.
func (s *Server) verdict(problem string, it item) (bool, string) {
	h := key(s.cfg.Seed, "validity", problem, it.Type, it.Text)
	if unit(h) < s.cfg.InvalidRate {
		return false, invalidReasons[mix64(h^0x5bd1e995)%uint64(len(invalidReasons))]
	}
	return true, validReason
}

// marshalOrFence encodes v, sometimes inside a ```json fence as real models
// do (never in JSON mode).
func marshalOrFence(v any, r *rng, jsonMode bool) string {
	var raw []byte
	if a, ok := v.(jsonAppender); ok {
		raw = a.appendJSON(make([]byte, 0, 4096)) // a synthesis reply, the largest, is ~3 KB
	} else {
		raw, _ = json.Marshal(v)
	}
	if r.chance(0.1) && !jsonMode {
		return "```json\n" + string(raw) + "\n```"
	}
	return string(raw)
}

// breakJSON damages a JSON reply: either cuts it short or turns booleans
// into strings.
func breakJSON(body string, r *rng) string {
	if r.chance(0.5) && (strings.Contains(body, "true") || strings.Contains(body, "false")) {
		body = strings.ReplaceAll(body, ":true", `:"true"`)
		return strings.ReplaceAll(body, ":false", `:"false"`)
	}
	return body[:len(body)/2]
}

type verdictJSON struct {
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

func (s *Server) judgeItem(model, prompt string, r *rng, malformed, jsonMode bool) string {
	problem, _ := between(prompt, "<problem>", "</problem>")
	it, _ := parseSingleItem(prompt)
	jp := s.judgeOf(model)
	if s.judgeFails(model, jp, "validity", problem, it.Type, it.Text) {
		return unusableReply
	}
	valid, reason := s.verdict(problem, it)
	valid, reason = s.judgedVerdict(model, jp, valid, reason, 0, 1, problem, it.Type, it.Text)
	if malformed {
		raw, _ := json.Marshal(verdictJSON{valid, reason})
		return breakJSON(string(raw), r)
	}
	return marshalOrFence(verdictJSON{valid, reason}, r, jsonMode)
}

type batchVerdictJSON struct {
	ID     any    `json:"id"`
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

func (s *Server) judgeBatch(model, prompt string, r *rng, malformed, jsonMode bool) string {
	problem, _ := between(prompt, "<problem>", "</problem>")
	jp := s.judgeOf(model)
	if s.judgeFails(model, jp, "validity", problem) {
		return unusableReply
	}
	items := parseItems(prompt)
	out := make([]batchVerdictJSON, 0, len(items))
	for i, it := range items {
		valid, reason := s.verdict(problem, it)
		valid, reason = s.judgedVerdict(model, jp, valid, reason, i, len(items), problem, it.Type, it.Text)
		out = append(out, batchVerdictJSON{it.idJSON(), valid, reason})
	}
	if r.chance(0.1) {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	if malformed {
		raw, _ := json.Marshal(out)
		return breakJSON(string(raw), r)
	}
	return marshalOrFence(out, r, jsonMode)
}

type satisfactionJSON struct {
	ID        any  `json:"id"`
	Satisfied bool `json:"satisfied"`
	Step      int  `json:"step"`
}

// satisfyProbability is the chance an item of a type is satisfied by a
// correct or a wrong solution.
func satisfyProbability(itemType string, correct bool) float64 {
	var right, wrong float64
	switch strings.ToUpper(itemType) {
	case "SUGGEST", "PROCESS":
		right, wrong = 0.85, 0.30
	case "FACTUAL":
		right, wrong = 0.95, 0.05
	case "ANSWER":
		right, wrong = 0.97, 0.03
	case "PITFALL":
		right, wrong = 0.10, 0.55
	case "BONUS":
		right, wrong = 0.40, 0.10
	default:
		return 0.5
	}
	if correct {
		return right
	}
	return wrong
}

func (s *Server) satisfy(model, prompt string, sampling uint64, r *rng, malformed, jsonMode bool) string {
	return s.satisfyAt(model, prompt, sampling, r, malformed, jsonMode, 0)
}

// satisfyAt is satisfy for a solution shown at lateness late of a group
// request (0 for the first shown or a solution alone, 1 for the last): a
// judge with a late_lenience profile turns a verdict in the solution's
// favour with that chance times late (lenientLate).
func (s *Server) satisfyAt(model, prompt string, sampling uint64, r *rng, malformed, jsonMode bool, late float64) string {
	jt, _ := cutJudged(prompt, "solution")
	problem, _ := between(jt.outside, "<problem>", "</problem>")
	sol := jt.section
	jp := s.judgeOf(model)
	if s.judgeFails(model, jp, "satisfy", problem, sol) {
		return unusableReply
	}
	final := finalAnswerOf(jt.outside)
	steps := shownSteps(sol)
	var correct bool
	if gold, ok := s.cfg.Answers[problem]; ok {
		correct = isCorrectFor(final, gold)
	} else {
		correct = strings.TrimSpace(final) != "" && unit(key(s.cfg.Seed, "ungraded", problem, final)) < 0.5
	}
	items := latestItems(parseItems(jt.outside))
	if marked, fail, ok := markedSatisfy(sol, items); ok {
		if fail {
			return unusableReply
		}
		s.flipMarked(model, jp, problem, sol, items, marked)
		s.lenientLate(model, jp, late, sol, items, marked)
		return finishJSON(marked, r, malformed, jsonMode)
	}
	// The verdicts are drawn from what the prompt says (the problem, the
	// solution, its answer) and the sampling, not from the prompt's bytes.
	verdictKey := newKeyer(s.cfg.Seed).str("satisfy-verdicts").str(problem).str(sol).str(final).u64(sampling).sum()
	out := make([]satisfactionJSON, 0, len(items))
	for _, it := range items {
		ir := newRNG(newKeyer(verdictKey).str(it.ID).str(it.Text).sum())
		var sat bool
		if s.cfg.Plant != nil {
			sat = s.plantedSatisfied(strings.TrimSpace(problem), it, correct, verdictKey)
		}
		// Some items are noise, fixed per problem and item, so that empirical
		// validity has items to reject.
		switch noise := unit(key(s.cfg.Seed, "noise", problem, it.Type, it.Text)); {
		case s.cfg.Plant != nil:
		case noise < 0.05:
			sat = true
		case noise < 0.10:
			sat = false
		case noise < 0.15:
			sat = ir.chance(0.5)
		default:
			sat = ir.chance(satisfyProbability(it.Type, correct))
		}
		if s.flips(model, jp, "satisfy", problem, sol, it.ID, it.Text) {
			sat = !sat
		}
		step := -1
		switch {
		case sat && len(steps) == 0:
			step = 0
		case sat && (it.Type == "ANSWER" || it.Type == "FACTUAL"):
			step = steps[len(steps)-1].n
		case sat:
			step = steps[ir.intn(len(steps))].n
		case ir.chance(0.3):
			step = 0
		}
		out = append(out, satisfactionJSON{it.idJSON(), sat, step})
	}
	s.lenientLate(model, jp, late, sol, items, out)
	return finishJSON(out, r, malformed, jsonMode)
}

// finishJSON encodes a reply, broken when the attempt is to be malformed.
func finishJSON(v any, r *rng, malformed, jsonMode bool) string {
	if malformed {
		raw, _ := json.Marshal(v)
		return breakJSON(string(raw), r)
	}
	return marshalOrFence(v, r, jsonMode)
}

// judgedVerdict is what the judge model says of an item whose true verdict
// is valid (with reason), shown at position pos of n: the truth, unless the
// model has a profile that errs here.
func (s *Server) judgedVerdict(model string, jp *JudgeProfile, valid bool, reason string, pos, n int, item ...string) (bool, string) {
	said := s.profiledValidity(model, jp, valid, pos, n, item...)
	switch {
	case said == valid:
		return valid, reason
	case said:
		return true, validReason
	default:
		return false, invalidReasons[key(s.cfg.Seed, append([]string{"judge-reason", model}, item...)...)%uint64(len(invalidReasons))]
	}
}

// flipMarked turns the marked verdicts a profiled judge errs on (its Flip)
// to their opposite: a verdict turned satisfied names the solution's last
// step (0 without steps), one turned unsatisfied no step.
func (s *Server) flipMarked(model string, jp *JudgeProfile, problem, sol string, items []item, marked []satisfactionJSON) {
	steps := shownSteps(sol)
	for i, it := range items {
		if !s.flips(model, jp, "satisfy", problem, sol, it.ID, it.Text) {
			continue
		}
		v := &marked[i]
		v.Satisfied, v.Step = !v.Satisfied, -1
		if v.Satisfied {
			v.Step = 0
			if len(steps) > 0 {
				v.Step = steps[len(steps)-1].n
			}
		}
	}
}
