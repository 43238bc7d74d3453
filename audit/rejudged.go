package audit

// Rejudged is what a re-judging of a corpus's sample (package rejudge)
// asked and was answered, for AddRejudged to turn into figures: the drawn
// groups (one per record, the items shown together in one request), the
// judges asked, and every judge's answer on every group, in rubric order
// and, with the order check, reversed.
type Rejudged struct {
	Groups [][]SampleItem
	Judges []RejudgeJudge
	// Panel is true when the judges are a panel whose strict majority is
	// the verdict compared with the stored one; false for one judge.
	Panel bool
	// Forward and Reversed hold the answers by group, then judge, in the
	// order of Groups and Judges; Reversed is nil without the order check.
	Forward, Reversed [][]JudgeAnswer
}

// RejudgeJudge is one judge of a re-judging, as its report names it: its
// endpoint with any credentials redacted, the hashes of the judge_batch
// and grounded_judge_batch templates it was asked with (empty for a kind
// the sample did not hold), and what it cost.
type RejudgeJudge struct {
	Name, Model, BaseURL       string
	Template, GroundedTemplate NullString
	LLM                        *LLMUsage // nil when it sent nothing
}

// JudgeAnswer is one judge's answer on one group: its verdicts in the
// group's order, nil when it failed. Asked is false for a request never
// sent (a budget stop, an interruption).
type JudgeAnswer struct {
	Items []ComparedItem // Other holds the judge's verdict
	Asked bool
}

// AddRejudged fills r from x: the sample's judged and failed counts, the
// agreement of the stored verdicts with the judge's (or the panel's), and
// the panel and order check sections. A group with no verdict counts as
// failed.
func (r *AgreementReport) AddRejudged(x *Rejudged) {
	var pairs []ComparedItem
	var panel []panelItem
	for gi, g := range x.Groups {
		if !x.Panel {
			if x.Forward[gi][0].Items == nil {
				r.Sample.Failed += len(g)
				continue
			}
			r.Sample.Judged += len(g)
			pairs = append(pairs, x.Forward[gi][0].Items...)
			continue
		}
		items, ok := panelVerdicts(g, x.Forward[gi])
		if !ok {
			r.Sample.Failed += len(g)
			continue
		}
		r.Sample.Judged += len(g)
		for _, it := range items {
			pairs = append(pairs, it.pair)
		}
		panel = append(panel, items...)
	}
	r.finish(pairs)
	if x.Panel {
		r.Panel = panelFigures(x.Judges, panel)
	}
	if x.Reversed != nil {
		r.OrderCheck = orderCheck(x)
	}
}
