package audit

import "github.com/rubricforge/rubricforge/llm"

// report fills rep from the answers of j.units(len(groups)): the sample's
// judged and failed counts, the agreement of the stored verdicts with the
// judge's (or the panel's), and the panel and order check sections.
func (j *rejudger) report(rep *AgreementReport, groups [][]SampleItem, answers []answer, snap llm.Snapshot) {
	fwd, rev := j.byGroup(len(groups), answers)
	var pairs []verdictPair
	var panel []panelItem
	for gi, g := range groups {
		if len(j.cfg.Panel) == 0 {
			if fwd[gi][0].pairs == nil {
				rep.Sample.Failed += len(g)
				continue
			}
			rep.Sample.Judged += len(g)
			pairs = append(pairs, fwd[gi][0].pairs...)
			continue
		}
		items, ok := panelVerdicts(g, fwd[gi])
		if !ok {
			rep.Sample.Failed += len(g)
			continue
		}
		rep.Sample.Judged += len(g)
		for _, it := range items {
			pairs = append(pairs, it.pair)
		}
		panel = append(panel, items...)
	}
	rep.finish(pairs)
	if len(j.cfg.Panel) > 0 {
		rep.Panel = j.panelFigures(panel, snap)
	}
	if j.cfg.OrderCheck > 0 {
		rep.OrderCheck = j.orderCheck(groups, fwd, rev)
	}
}

// byGroup splits the answers of j.units by group and judge: those in
// rubric order, and those reversed (nil rows without the order check).
func (j *rejudger) byGroup(n int, answers []answer) (fwd, rev [][]answer) {
	fwd = make([][]answer, n)
	rev = make([][]answer, n)
	for g := range n {
		fwd[g] = make([]answer, len(j.judges))
		rev[g] = make([]answer, len(j.judges))
	}
	for i, u := range j.units(n) {
		if u.reversed {
			rev[u.group][u.judge] = answers[i]
		} else {
			fwd[u.group][u.judge] = answers[i]
		}
	}
	return fwd, rev
}
