package audit

import (
	"fmt"

	"github.com/rubricforge/rubricforge/judgestats"
)

// PanelRejudge is what validate rejudge --panel adds to its report: each
// judge's figures, how much the judges agree with each other, and the
// validity rates with Wilson intervals, the panel's and each judge's.
type PanelRejudge struct {
	Rule       string              `json:"rule"`
	Judges     []PanelJudgeFigures `json:"judges"`
	InterJudge []KappaFigure       `json:"inter_judge"` // Fleiss' kappa, all types first
	ValidRates []TypeValidRates    `json:"valid_rates"` // all types first
}

// PanelRule says how a panel decides, in the words reports use.
const PanelRule = "strict majority; a judge that failed counts as a vote against; a tie is invalid"

// PanelJudgeFigures are one judge's figures in a panel rejudge.
type PanelJudgeFigures struct {
	Name     string     `json:"name"`
	Model    string     `json:"model"`
	BaseURL  string     `json:"base_url"`
	Template NullString `json:"template"` // content hash of its judge_batch template (math items); null when none were asked
	// GroundedTemplate: of its grounded_judge_batch template (criteria).
	GroundedTemplate NullString `json:"grounded_template"`
	Answered         int64      `json:"answered"` // items it gave a verdict on
	Failed           int64      `json:"failed"`   // items it failed on (each a vote against)
	Stored           *Agreement `json:"with_stored"`
	Panel            *Agreement `json:"with_panel"`
	LLM              *LLMUsage  `json:"llm"`
}

// KappaFigure is an inter-judge agreement over the items of one type
// ("all" for every type): Fleiss' kappa over the items at least two judges
// answered, a judge's failures left out of its ratings.
type KappaFigure struct {
	Type  string   `json:"type"`
	Items int64    `json:"items"`
	Kappa *float64 `json:"kappa"` // null when no item has two answers, or all said the same
	Scale string   `json:"kappa_scale"`
}

// TypeValidRates are the validity rates of one item type ("all" for every
// type): the panel's and each judge's, in the panel's order.
type TypeValidRates struct {
	Type   string       `json:"type"`
	Panel  RateFigure   `json:"panel"`
	Judges []RateFigure `json:"judges"`
}

// RateFigure is a validity rate with its 95% Wilson interval: Valid of Of
// items; Failed counts the items the judge failed on, which are not in Of
// (for the panel: the items at least one judge failed on, in Of, each
// failure a vote against).
type RateFigure struct {
	Judge    string               `json:"judge"`
	Valid    int64                `json:"valid"`
	Of       int64                `json:"of"`
	Failed   int64                `json:"failed"`
	Rate     *float64             `json:"rate"`
	Interval *judgestats.Interval `json:"interval"`
}

// panelItem is one item the panel judged: every judge's vote and the
// panel's verdict.
type panelItem struct {
	pair  ComparedItem // Other is the panel's verdict
	votes []judgestats.Vote
}

// panelVerdicts turns one group's answers by every judge into the panel's
// verdicts; ok is false when the panel gave none (a judge was never asked,
// or every judge failed).
func panelVerdicts(g []SampleItem, answers []JudgeAnswer) (items []panelItem, ok bool) {
	answered := 0
	for _, a := range answers {
		if !a.Asked {
			return nil, false
		}
		if a.Items != nil {
			answered++
		}
	}
	if answered == 0 {
		return nil, false
	}
	for i := range g {
		votes := make([]judgestats.Vote, len(answers))
		yes, failed := 0, 0
		var p ComparedItem
		for k, a := range answers {
			if a.Items == nil {
				failed++
				continue
			}
			p = a.Items[i]
			votes[k] = judgestats.Vote{OK: true, Yes: p.Other}
			if p.Other {
				yes++
			}
		}
		p.Other = judgestats.Majority(votes)
		p.Reason = fmt.Sprintf("%d of %d judges said valid", yes, len(answers))
		if failed > 0 {
			p.Reason += fmt.Sprintf(", %d failed", failed)
		}
		items = append(items, panelItem{pair: p, votes: votes})
	}
	return items, true
}

// panelFigures computes the panel section over the items the panel judged.
func panelFigures(judges []RejudgeJudge, items []panelItem) *PanelRejudge {
	tally := newVerdictTally()
	for _, j := range judges {
		tally.judges = append(tally.judges, j.Name) // the panel's order, even for a judge that never answered
	}
	for _, it := range items {
		votes := make([]judgeVote, len(it.votes))
		for k, v := range it.votes {
			votes[k] = judgeVote{judge: judges[k].Name, vote: v}
		}
		tally.add(it.pair.Type, &it.pair.Stored, it.pair.Other, votes)
	}
	out := &PanelRejudge{Rule: PanelRule, InterJudge: tally.interJudge(), ValidRates: tally.validRates()}
	for _, j := range judges {
		f := PanelJudgeFigures{Name: j.Name, Model: j.Model, BaseURL: j.BaseURL, Template: j.Template, GroundedTemplate: j.GroundedTemplate,
			Stored: tally.agreement(j.Name, true), Panel: tally.agreement(j.Name, false), LLM: &LLMUsage{}}
		f.Answered, f.Failed = tally.answered(j.Name)
		if j.LLM != nil {
			f.LLM = j.LLM
		}
		out.Judges = append(out.Judges, f)
	}
	return out
}

func (r *RateFigure) count(valid bool) {
	r.Of++
	if valid {
		r.Valid++
	}
}

func (r *RateFigure) finish() {
	r.Rate = ratio(r.Valid, r.Of)
	if iv, ok := judgestats.Wilson(r.Valid, r.Of, judgestats.Z95); ok {
		r.Interval = &iv
	}
}
