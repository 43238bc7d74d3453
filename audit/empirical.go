package audit

import (
	"math"

	"github.com/rubricforge/rubricforge/reward"
)

// defaultAlpha is the pipeline's empirical validity threshold, used for
// records whose provenance names none.
const defaultAlpha = 0.2

// empAcc collects empirical validity: the stored per-item figures, the
// per-rollout verdicts against correctness, and recomputation checks.
type empAcc struct {
	byType     map[string]*TypeEmpirical
	sat        map[string]*confusion // [correct][satisfied] over (rollout, item) pairs
	judgeVsEmp confusion
	judgeByTyp map[string]*confusion
	recomputed int64
}

func newEmpAcc() empAcc {
	return empAcc{byType: map[string]*TypeEmpirical{}, sat: map[string]*confusion{}, judgeByTyp: map[string]*confusion{}}
}

func (e *empAcc) add(a *acc, r *row, rowNum int64) {
	alpha := defaultAlpha
	if p := r.Provenance.Alpha; p != nil {
		alpha = *p
	}
	for i := range r.Rubric {
		it := &r.Rubric[i]
		t := e.byType[it.Type]
		if t == nil {
			t = &TypeEmpirical{Type: it.Type}
			e.byType[it.Type] = t
		}
		t.Items++
		if it.SatRate != nil {
			t.Measured++
			if *it.SatRate > 0 && *it.SatRate < 1 {
				t.Discriminating++
			}
			if it.Corr != nil && *it.Corr > alpha {
				t.Correlated++
			}
			switch {
			case it.EmpiricalValid == nil:
				t.Undecided++
			case *it.EmpiricalValid:
				t.Valid++
			}
		}
		if it.Valid != nil && it.EmpiricalValid != nil {
			e.judgeVsEmp.add(*it.Valid, *it.EmpiricalValid)
			pairs(e.judgeByTyp, it.Type).add(*it.Valid, *it.EmpiricalValid)
		}
	}
	e.addVerdicts(r)
	if e.recompute(a, r, rowNum, r.Provenance.Alpha) {
		e.recomputed++
	}
}

func pairs(m map[string]*confusion, t string) *confusion {
	c := m[t]
	if c == nil {
		c = &confusion{}
		m[t] = c
	}
	return c
}

// addVerdicts counts, per item type, satisfied items among correct and
// incorrect rollouts (seed 000, Table 7), over rollouts whose verdicts
// match the rubric.
func (e *empAcc) addVerdicts(r *row) {
	for i := range r.Rollouts {
		ro := &r.Rollouts[i]
		if len(ro.Satisfaction) == 0 || !verdictsMatch(ro.Satisfaction, r.Rubric) {
			continue
		}
		for k, s := range ro.Satisfaction {
			pairs(e.sat, r.Rubric[k].Type).add(ro.Correct, s.Satisfied)
		}
	}
}

// recompute measures every item again from the rollouts' verdicts, when
// every rollout has verdicts that match the rubric, and reports stored
// figures that differ. It reports whether the record was recomputed.
func (e *empAcc) recompute(a *acc, r *row, rowNum int64, alpha *float64) bool {
	if len(r.Rollouts) == 0 || len(r.Rubric) == 0 {
		return false
	}
	for i := range r.Rollouts {
		if !verdictsMatch(r.Rollouts[i].Satisfaction, r.Rubric) {
			return false
		}
	}
	correct := make([]float64, len(r.Rollouts))
	for i := range r.Rollouts {
		if r.Rollouts[i].Correct {
			correct[i] = 1
		}
	}
	sat := make([]float64, len(r.Rollouts))
	for k := range r.Rubric {
		it := &r.Rubric[k]
		for i := range r.Rollouts {
			sat[i] = 0
			if r.Rollouts[i].Satisfaction[k].Satisfied {
				sat[i] = 1
			}
		}
		al := defaultAlpha
		if alpha != nil {
			al = *alpha
		}
		want := reward.ItemValidity(sat, correct, it.Polarity, al)
		if alpha == nil {
			want.Valid = it.EmpiricalValid // no threshold to check against
		}
		if !sameFloat(it.SatRate, want.SatRate) || !sameFloat(it.Corr, want.Corr) || !sameBool(it.EmpiricalValid, want.Valid) {
			a.violate(r, rowNum, &it.ID, RuleEmpiricalMismatch, "stored sat_rate %s, corr %s, empirical_valid %s; the verdicts give %s, %s, %s",
				fmtPtr(it.SatRate), fmtPtr(it.Corr), fmtBool(it.EmpiricalValid), fmtPtr(want.SatRate), fmtPtr(want.Corr), fmtBool(want.Valid))
		}
	}
	return true
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return math.Abs(*a-*b) <= 1e-9
}

func sameBool(a, b *bool) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func fmtPtr(f *float64) string {
	if f == nil {
		return "null"
	}
	return formatFloat(math.Round(*f*1e4) / 1e4)
}

func fmtBool(b *bool) string {
	switch {
	case b == nil:
		return "null"
	case *b:
		return "true"
	}
	return "false"
}

func (e *empAcc) merge(o *empAcc) {
	for t, v := range o.byType {
		w := e.byType[t]
		if w == nil {
			w = &TypeEmpirical{Type: t}
			e.byType[t] = w
		}
		w.Items += v.Items
		w.Measured += v.Measured
		w.Discriminating += v.Discriminating
		w.Correlated += v.Correlated
		w.Valid += v.Valid
		w.Undecided += v.Undecided
	}
	for t, c := range o.sat {
		pairs(e.sat, t).merge(*c)
	}
	e.judgeVsEmp.merge(o.judgeVsEmp)
	for t, c := range o.judgeByTyp {
		pairs(e.judgeByTyp, t).merge(*c)
	}
	e.recomputed += o.recomputed
}
