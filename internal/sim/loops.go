package sim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The training-time loops' prompts (package prompts: rubricator,
// refine_guided, elicit) and a simulated policy whose quality a test sets
// through the model name.
//
// A model named "policy@correct=C,rubricator=R" (either setting may be left
// out) is a policy: its rollouts are correct at rate C (spread per problem
// as Config.CorrectRate is), and as a rubricator it writes rubrics in which
// a share R of the criteria are ones the simulated satisfaction judge
// grades by the response's correctness (valid, in RLCER's sense, wherever
// correctness varies) and the rest ones it grades the same whatever the
// response (never valid). A test drives a policy's drift by the name it
// sends at each step.

// PolicyModel is the model name of a simulated policy with these rates.
func PolicyModel(correct, rubricator float64) string {
	return fmt.Sprintf("policy@correct=%s,rubricator=%s", strconv.FormatFloat(correct, 'f', -1, 64), strconv.FormatFloat(rubricator, 'f', -1, 64))
}

// policy is the quality a model name sets; ok is false for another model.
type policy struct {
	correct, rubricator float64
	hasCorrect          bool
}

func policyOf(model string) (policy, bool) {
	rest, ok := strings.CutPrefix(model, "policy@")
	if !ok {
		return policy{}, false
	}
	p := policy{rubricator: 0.5}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch k {
		case "correct":
			p.correct, p.hasCorrect = clamp01(f), true
		case "rubricator":
			p.rubricator = clamp01(f)
		}
	}
	return p, true
}

// correctRate is a rollout's chance of being correct under model: the
// policy's rate spread per problem, else the problem's own rate.
func (s *Server) correctRate(model, problem string) float64 {
	p, ok := policyOf(model)
	if !ok || !p.hasCorrect {
		return s.problemCorrectRate(problem)
	}
	v := unit(key(s.cfg.Seed, "spread", problem))
	return clamp01(p.correct + (v-0.5)*0.4*min(p.correct, 1-p.correct))
}

// Kinds of the loops' prompts.
const (
	KindRubricator   Kind = "rubricator"
	KindRefineGuided Kind = "refine_guided"
	KindElicit       Kind = "elicit"
)

// loopKind recognizes the loops' prompts by the markers their templates
// always render; KindUnknown for the others.
func loopKind(p string) Kind {
	has := func(all ...string) bool {
		for _, s := range all {
			if !strings.Contains(p, s) {
				return false
			}
		}
		return true
	}
	switch {
	case has("<current_rubric>", "<better_solution>", "<worse_solution>"):
		return KindElicit
	case has("<previous_response>", "<criteria_not_met>"):
		return KindRefineGuided
	case has("<response>", `"question_domain"`, `"current_score"`):
		return KindRubricator
	}
	return KindUnknown
}

// rubricatorCriteria are the criteria a simulated rubricator draws from;
// {W} is a word of the problem, {K} a variant number.
var rubricatorCriteria = []string{
	"Sets up the relation involving {W} before computing (variant {K})",
	"Checks the value of {W} against every condition of the problem (variant {K})",
	"States each intermediate result about {W} before using it (variant {K})",
	"Keeps the reasoning about {W} on what the problem asks (variant {K})",
	"Explains why the chosen method fits {W} (variant {K})",
}

var rubricatorPenalties = []string{
	"Drops a condition on {W} partway through (variant {K})",
	"Repeats the computation of {W} without progress (variant {K})",
	"Guesses the value of {W} without deriving it (variant {K})",
}

type rubricatorOut struct {
	Domain  string           `json:"question_domain"`
	Rubrics []rubricatorItem `json:"rubrics"`
	Max     float64          `json:"maximum_score"`
	Min     float64          `json:"minimum_score"`
	Current float64          `json:"current_score"`
}

type rubricatorItem struct {
	Category  string  `json:"category"`
	Criterion string  `json:"criterion"`
	Points    float64 `json:"points"`
}

// rubricator writes a rubric in RLCER's format: five to eight criteria, a
// share of them (the policy's rubricator rate) graded by correctness, the
// others graded alike for every response, their noise class found by
// trying variants; the response's own score below the midpoint.
func (s *Server) rubricator(model, prompt string, r *rng, malformed bool) string {
	problem, _ := between(prompt, "<problem>", "</problem>")
	pol, _ := policyOf(model)
	if _, ok := policyOf(model); !ok {
		pol.rubricator = 0.5
	}
	c := problemCues(problem)
	n := 5 + r.intn(4)
	out := rubricatorOut{Domain: "math/" + c.word(r)}
	for i := range n {
		pts := float64(1 + r.intn(5))
		pool, typ := rubricatorCriteria, "PROCESS"
		if i%3 == 2 {
			pts, pool, typ = -pts, rubricatorPenalties, "PITFALL"
		}
		text := s.criterionOfClass(problem, typ, pick(r, pool), c, r, r.chance(pol.rubricator))
		out.Rubrics = append(out.Rubrics, rubricatorItem{Category: "Reasoning Clarity & Flow", Criterion: text, Points: pts})
		if pts > 0 {
			out.Max += pts
		} else {
			out.Min += pts
		}
	}
	out.Current = (out.Max+out.Min)/2 - 1
	raw, _ := json.Marshal(out)
	if malformed {
		return string(raw[:len(raw)/2])
	}
	return string(raw)
}

// criterionOfClass fills template until the criterion is of the wanted
// class for the simulated satisfaction judge: graded by correctness
// (discriminative) or graded alike for every response.
func (s *Server) criterionOfClass(problem, typ, template string, c cues, r *rng, discriminative bool) string {
	for k := 1; ; k++ {
		text := strings.ReplaceAll(strings.ReplaceAll(template, "{W}", c.word(r)), "{K}", strconv.Itoa(k))
		noise := unit(key(s.cfg.Seed, "noise", problem, typ, text))
		if discriminative && noise >= 0.15 || !discriminative && noise < 0.10 || k > 200 {
			return text
		}
	}
}

// refineGuided writes the refined response: a rollout of the problem
// correct at the policy's rate raised toward 1, as a refinement that
// addresses the failed criteria usually is.
func (s *Server) refineGuided(model, prompt string, sampleKey string, malformed bool) solution {
	problem, _ := between(prompt, "<problem>", "</problem>")
	rate := s.correctRate(model, problem)
	return s.rolloutAt(problem, s.goldFor(problem), "refine/"+sampleKey, malformed, rate+(1-rate)*0.6)
}

// elicit proposes one or two criteria from the problem's words: a
// process criterion and, one time in two, a pitfall.
func (s *Server) elicit(prompt string, r *rng, malformed bool) string {
	problem, _ := between(prompt, "<problem>", "</problem>")
	worse, _ := between(prompt, "<worse_solution>", "</worse_solution>")
	c := problemCues(problem)
	rr := newRNG(key(s.cfg.Seed, "elicit", problem, worse))
	type criterion struct {
		Type   string  `json:"type"`
		Text   string  `json:"text"`
		Weight float64 `json:"weight"`
	}
	out := []criterion{{"PROCESS", s.criterionOfClass(problem, "PROCESS", "Verifies the result for {W} by substituting it back (elicited {K})", c, rr, true), float64(1 + rr.intn(3))}}
	if rr.chance(0.5) {
		out = append(out, criterion{"PITFALL", s.criterionOfClass(problem, "PITFALL", "Loses track of {W} between steps (elicited {K})", c, rr, true), float64(1 + rr.intn(3))})
	}
	raw, _ := json.Marshal(out)
	if malformed {
		return breakJSON(string(raw), r)
	}
	return string(raw)
}
