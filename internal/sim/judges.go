package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// JudgeProfile makes the simulated endpoint answer as a judge with known
// errors when a request names its model (Config.Judges). The server's own
// verdicts (the ones every model gets without a profile) are the truth a
// profiled judge errs against, so a test knows each item's true validity,
// each judge's error rates and its position bias.
//
// Errors are drawn per judge model and item (validity), or per judge model,
// item and response (satisfaction, grounded scores), never per request: a
// judge asked again, or shown the items in another order, keeps its errors
// except for the part that depends on position.
type JudgeProfile struct {
	// FalseValid is the chance of calling a truly invalid item or criterion
	// valid; FalseInvalid the chance of calling a valid one invalid.
	FalseValid, FalseInvalid float64
	// FirstBias is the position bias: an invalid item shown first among
	// several is called valid with FalseValid + FirstBias, falling linearly
	// to FalseValid for the item shown last (an item judged alone counts as
	// first). Valid items are not affected.
	FirstBias float64
	// Flip is the chance of turning a satisfaction verdict to its opposite,
	// and a grounded criterion's score to its opposite (0 to the weight, any
	// other score to 0).
	Flip float64
	// Fail is the chance that the judge gives no usable answer to a
	// question (a problem's items, a response's verdicts): it answers with
	// prose on every attempt, repairs included.
	Fail float64
	// LateLenience is a simulated position bias of group judging: in a
	// request about several responses (satisfy_group,
	// score_grounded_group), a verdict against the response shown k-th of
	// n (an item not met, a PITFALL fallen into, a criterion under its
	// weight) is turned in its favour with chance LateLenience·k/(n-1):
	// never for the response shown first (or judged alone), LateLenience
	// for the last. The draw is per judge model, response and item, so
	// the only thing that depends on position is the chance.
	LateLenience float64
}

// judgeOf is the profile of the judge model, nil when it has none.
func (s *Server) judgeOf(model string) *JudgeProfile {
	if p, ok := s.cfg.Judges[model]; ok {
		return &p
	}
	return nil
}

// firstness is 1 for the item shown first among n, falling linearly to 0
// for the last; an item shown alone is first.
func firstness(pos, n int) float64 {
	if n <= 1 {
		return 1
	}
	return 1 - float64(pos)/float64(n-1)
}

// profiledValidity is a profiled judge's verdict on an item whose true
// verdict is truth, shown at position pos of n. key identifies the item.
func (s *Server) profiledValidity(model string, p *JudgeProfile, truth bool, pos, n int, item ...string) bool {
	if p == nil {
		return truth
	}
	u := unit(key(s.cfg.Seed, append([]string{"judge-error", model}, item...)...))
	if truth {
		return u >= p.FalseInvalid
	}
	return u < p.FalseValid+p.FirstBias*firstness(pos, n)
}

// judgeFails reports whether the profiled judge gives no usable answer to
// the question identified by parts.
func (s *Server) judgeFails(model string, p *JudgeProfile, parts ...string) bool {
	return p != nil && p.Fail > 0 && unit(key(s.cfg.Seed, append([]string{"judge-fail", model}, parts...)...)) < p.Fail
}

// flips reports whether the profiled judge turns the verdict identified by
// parts to its opposite.
func (s *Server) flips(model string, p *JudgeProfile, parts ...string) bool {
	return p != nil && p.Flip > 0 && unit(key(s.cfg.Seed, append([]string{"judge-flip", model}, parts...)...)) < p.Flip
}

// ParseJudgeProfile reads simllm's -judge value MODEL:key=value,...: keys
// false_valid, false_invalid, first_bias, flip, fail, each a rate in [0, 1].
func ParseJudgeProfile(v string) (string, JudgeProfile, error) {
	model, spec, ok := strings.Cut(v, ":")
	if !ok || model == "" {
		return "", JudgeProfile{}, fmt.Errorf("judge %q: want MODEL:false_valid=R,false_invalid=R,first_bias=R,flip=R,fail=R,late_lenience=R", v)
	}
	var p JudgeProfile
	fields := map[string]*float64{"false_valid": &p.FalseValid, "false_invalid": &p.FalseInvalid, "first_bias": &p.FirstBias, "flip": &p.Flip, "fail": &p.Fail, "late_lenience": &p.LateLenience}
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue
		}
		k, val, _ := strings.Cut(kv, "=")
		dst, known := fields[k]
		if !known {
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			return "", JudgeProfile{}, fmt.Errorf("judge %s: unknown setting %q (known: %s)", model, k, strings.Join(names, ", "))
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || f < 0 || f > 1 {
			return "", JudgeProfile{}, fmt.Errorf("judge %s: %s=%q is not a rate in [0, 1]", model, k, val)
		}
		*dst = f
	}
	return model, p, nil
}

// TrueValidity is the simulated truth about a rubric item: the verdict a
// judge without a profile gives it, and the one a profiled judge errs
// against. problem is the problem's text, trimmed as the judge reads it
// from its prompt.
func (s *Server) TrueValidity(problem, itemType, itemText string) bool {
	valid, _ := s.verdict(strings.TrimSpace(problem), item{Type: itemType, Text: itemText})
	return valid
}

// lenientAt reports whether the profiled judge turns its verdict on the
// item (or criterion) id of response in the response's favour, the
// response shown at lateness late of a group request (LateLenience).
func (s *Server) lenientAt(model string, p *JudgeProfile, late float64, response, id string) bool {
	return p != nil && p.LateLenience > 0 && late > 0 && unit(key(s.cfg.Seed, "late-lenience", model, response, id)) < p.LateLenience*late
}

// lenientLate turns, for a profiled judge, the verdicts on sol against it
// in its favour (lenientAt): an item other than a PITFALL met (at step 0,
// the whole solution), a PITFALL not fallen into.
func (s *Server) lenientLate(model string, p *JudgeProfile, late float64, sol string, items []item, verdicts []satisfactionJSON) {
	for k := range verdicts {
		if k >= len(items) {
			return
		}
		pitfall := strings.EqualFold(items[k].Type, "PITFALL")
		if verdicts[k].Satisfied != pitfall || !s.lenientAt(model, p, late, sol, items[k].ID) {
			continue
		}
		verdicts[k].Satisfied = !pitfall
		verdicts[k].Step = 0
		if pitfall {
			verdicts[k].Step = -1
		}
	}
}
