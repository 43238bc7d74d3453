package audit

import (
	"maps"
	"slices"

	"github.com/rubricforge/rubricforge/judgestats"
)

// verdictTally counts a panel's verdicts one at a time, by item type: how
// much the judges agree with each other (Fleiss' kappa), each judge's
// agreement with the panel's verdict (and with a stored one, for a
// rejudge), each judge's failures, and the validity rates. A rejudge
// --panel and validate's Judge panel section both count with it.
type verdictTally struct {
	judges []string // in the order they were first seen
	byType map[string]*typeTally
}

type typeTally struct {
	fleiss judgestats.Fleiss
	panel  RateFigure
	judge  map[string]*judgeTally
}

type judgeTally struct {
	rate              RateFigure
	vsPanel, vsStored confusion
}

// judgeVote is one judge's vote on one verdict.
type judgeVote struct {
	judge string
	vote  judgestats.Vote
}

func newVerdictTally() *verdictTally { return &verdictTally{byType: map[string]*typeTally{}} }

// add counts one verdict on an item of type typ: the panel's, every
// judge's vote, and the stored verdict it is compared with (nil: none).
func (t *verdictTally) add(typ string, stored *bool, panel bool, votes []judgeVote) {
	for _, v := range votes {
		if !slices.Contains(t.judges, v.judge) {
			t.judges = append(t.judges, v.judge)
		}
	}
	for _, key := range []string{"all", typ} {
		tt := t.byType[key]
		if tt == nil {
			tt = &typeTally{panel: RateFigure{Judge: "panel"}, judge: map[string]*judgeTally{}}
			t.byType[key] = tt
		}
		tt.add(stored, panel, votes)
	}
}

func (tt *typeTally) add(stored *bool, panel bool, votes []judgeVote) {
	plain := make([]judgestats.Vote, len(votes))
	failed := false
	tt.panel.count(panel)
	for i, v := range votes {
		plain[i] = v.vote
		jt := tt.judge[v.judge]
		if jt == nil {
			jt = &judgeTally{rate: RateFigure{Judge: v.judge}}
			tt.judge[v.judge] = jt
		}
		if !v.vote.OK {
			jt.rate.Failed++
			failed = true
			continue
		}
		jt.rate.count(v.vote.Yes)
		jt.vsPanel.add(panel, v.vote.Yes)
		if stored != nil {
			jt.vsStored.add(*stored, v.vote.Yes)
		}
	}
	if failed {
		tt.panel.Failed++
	}
	tt.fleiss.AddVotes(plain)
}

// types lists "all" and then the types counted, in schema order.
func (t *verdictTally) types() []string {
	var types []string
	for k := range maps.Keys(t.byType) {
		if k != "all" {
			types = append(types, k)
		}
	}
	if len(t.byType) == 0 {
		return nil
	}
	return append([]string{"all"}, typeOrder(types)...)
}

// interJudge is Fleiss' kappa of the judges, overall and by type.
func (t *verdictTally) interJudge() []KappaFigure {
	out := []KappaFigure{}
	for _, typ := range t.types() {
		f := KappaFigure{Type: typ}
		k, n, ok := t.byType[typ].fleiss.Kappa()
		f.Items = n
		if ok {
			f.Kappa = &k
		}
		f.Scale = kappaScale(f.Kappa)
		out = append(out, f)
	}
	return out
}

// validRates are the panel's and each judge's rates by type, with their
// Wilson intervals.
func (t *verdictTally) validRates() []TypeValidRates {
	out := []TypeValidRates{}
	for _, typ := range t.types() {
		tt := t.byType[typ]
		tr := TypeValidRates{Type: typ, Panel: tt.panel, Judges: []RateFigure{}}
		tr.Panel.finish()
		for _, name := range t.judges {
			r := RateFigure{Judge: name}
			if jt := tt.judge[name]; jt != nil {
				r = jt.rate
			}
			r.finish()
			tr.Judges = append(tr.Judges, r)
		}
		out = append(out, tr)
	}
	return out
}

// agreement is judge name's agreement with the panel's verdicts, or with
// the stored ones, overall and by type.
func (t *verdictTally) agreement(name string, withStored bool) *Agreement {
	of := func(tt *typeTally) confusion {
		jt := tt.judge[name]
		switch {
		case jt == nil:
			return confusion{}
		case withStored:
			return jt.vsStored
		}
		return jt.vsPanel
	}
	a := "panel"
	if withStored {
		a = "stored judge"
	}
	var all confusion
	if tt := t.byType["all"]; tt != nil {
		all = of(tt)
	}
	byType := map[string]*confusion{}
	for _, typ := range t.types()[min(1, len(t.types())):] {
		c := of(t.byType[typ])
		byType[typ] = &c
	}
	return agreementOf(a, name, all, byType)
}

// answered and failed count judge name's verdicts and failures.
func (t *verdictTally) answered(name string) (answered, failed int64) {
	if tt := t.byType["all"]; tt != nil {
		if jt := tt.judge[name]; jt != nil {
			return jt.rate.Of, jt.rate.Failed
		}
	}
	return 0, 0
}
