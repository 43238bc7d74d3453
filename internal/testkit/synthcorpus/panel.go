package synthcorpus

import (
	"math/rand/v2"
	"slices"

	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/schema"
)

// PanelJudge is a simulated judge of a record's panel: its name and model,
// the chance it calls a truly invalid (unsatisfied) verdict valid
// (satisfied) and the reverse, and the chance it gives no verdict on a
// question (an item, a rollout, a criterion).
type PanelJudge struct {
	Name, Model              string
	FalseValid, FalseInvalid float64
	Fail                     float64
}

// AddPanel gives rec a judge panel as distill run writes one (Record.Panel):
// each judge's vote on every judged rubric item and grounded criterion
// (stage "judge") and on every rollout's items (stage "empirical"), drawn
// with its error rates from rec's own verdicts, taken as the truth, by a
// generator seeded with seed and rec.ID. The stored verdicts become the
// panel's (judgestats.Majority: a failed judge votes against, a tie is
// no), and the empirical figures are stored again from them when every
// rollout has a verdict on every item. Tests know the truth (rec before
// the call) and each judge's errors.
func AddPanel(rec *schema.Record, seed uint64, judges ...PanelJudge) {
	rng := rand.New(rand.NewPCG(seed, stringHash(rec.ID)))
	p := &schema.Panel{}
	for _, stage := range []string{"judge", "empirical"} {
		for _, j := range judges {
			p.Judges = append(p.Judges, schema.PanelMember{Name: j.Name, Stage: stage, Model: j.Model, Template: "synthetic"})
		}
	}
	for k := range rec.Rubric {
		it := &rec.Rubric[k]
		if it.Valid == nil {
			continue
		}
		verdicts, valid := panelVerdicts(rng, *it.Valid, judges)
		p.Validity = append(p.Validity, schema.ItemVerdicts{ItemID: it.ID, Verdicts: verdicts})
		it.Valid = &valid
	}
	addPanelSatisfaction(rng, rec, p, judges)
	if g := rec.Grounded; g != nil {
		for q := range g.Questions {
			for c := range g.Questions[q].Criteria {
				cr := &g.Questions[q].Criteria[c]
				if cr.Valid == nil {
					continue
				}
				verdicts, valid := panelVerdicts(rng, *cr.Valid, judges)
				p.Criteria = append(p.Criteria, schema.CriterionVerdicts{Question: g.Questions[q].Index, CriterionID: cr.ID, Verdicts: verdicts})
				cr.Valid = &valid
			}
		}
	}
	rec.Panel = p
}

// stringHash is FNV-1a of s: the record's part of its generator's seed.
func stringHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// vote draws one judge's verdict on a question whose truth is truth; ok
// is false when the judge fails.
func (j PanelJudge) vote(rng *rand.Rand, truth bool) (verdict, ok bool) {
	fails, u := rng.Float64() < j.Fail, rng.Float64()
	if fails {
		return false, false
	}
	if truth {
		return u >= j.FalseInvalid, true
	}
	return u < j.FalseValid, true
}

// panelVerdicts are every judge's verdicts on one question and the
// panel's.
func panelVerdicts(rng *rand.Rand, truth bool, judges []PanelJudge) ([]schema.JudgeVerdict, bool) {
	out := make([]schema.JudgeVerdict, len(judges))
	votes := make([]judgestats.Vote, len(judges))
	for i, j := range judges {
		v, ok := j.vote(rng, truth)
		out[i] = schema.JudgeVerdict{Judge: j.Name, Reason: "synthetic"}
		if ok {
			out[i].Valid = &v
		} else {
			out[i].Reason = "no usable answer"
		}
		votes[i] = judgestats.Vote{OK: ok, Yes: v}
	}
	return out, judgestats.Majority(votes)
}

// addPanelSatisfaction draws every judge's satisfaction verdicts on each
// rollout (a failure takes the whole rollout) and stores the panel's
// (judgestats.Met: against the response on a failure or a tie).
func addPanelSatisfaction(rng *rand.Rand, rec *schema.Record, p *schema.Panel, judges []PanelJudge) {
	complete := rec.Provenance.Alpha != nil
	for r := range rec.Rollouts {
		ro := &rec.Rollouts[r]
		if len(ro.Satisfaction) == 0 {
			complete = false
			continue
		}
		complete = complete && len(ro.Satisfaction) == len(rec.Rubric)
		rv := schema.RolloutVerdicts{Rollout: ro.Index}
		votes := make([][]judgestats.Vote, len(ro.Satisfaction))
		for _, j := range judges {
			js := schema.JudgeSatisfaction{Judge: j.Name, Failed: rng.Float64() < j.Fail}
			for k, s := range ro.Satisfaction {
				sat := false
				if !js.Failed {
					sat, _ = PanelJudge{FalseValid: j.FalseValid, FalseInvalid: j.FalseInvalid}.vote(rng, s.Satisfied)
					js.Satisfaction = append(js.Satisfaction, schema.Satisfaction{ID: s.ID, Satisfied: sat, Step: s.Step})
				}
				votes[k] = append(votes[k], judgestats.Vote{OK: !js.Failed, Yes: sat})
			}
			rv.Judges = append(rv.Judges, js)
		}
		for k, sat := range ro.Satisfaction {
			negative := false
			if it := slices.IndexFunc(rec.Rubric, func(it schema.Item) bool { return it.ID == sat.ID }); it >= 0 {
				negative = rec.Rubric[it].Polarity < 0 || rec.Rubric[it].Weight < 0
			}
			ro.Satisfaction[k].Satisfied = judgestats.Met(votes[k], negative)
		}
		p.Satisfaction = append(p.Satisfaction, rv)
	}
	if complete && len(rec.Rollouts) > 0 {
		storeEmpirical(rec)
	}
}
