package review

import (
	"cmp"
	"maps"
	"slices"

	"github.com/rubricforge/rubricforge/audit"
)

// Summarize is what `validate` says of a corpus's review: how much of it
// people decided, how their verdicts agree with the validity judge's and
// with each other's (Cohen's kappa, overall and by item type; criteria
// under CriterionType), and the records they flagged. A reviewer who has
// decided and flagged nothing is left out.
func Summarize(c *Corpus, d *Decisions) *audit.PeopleReview {
	r := &audit.PeopleReview{Logs: d.Logs, Items: c.Items(), VsJudge: []*audit.Agreement{}, Between: []*audit.Agreement{},
		Reviewers: []audit.ReviewerCoverage{}, Flagged: []audit.FlaggedRecord{}}
	r.Conflicts = len(d.Conflicts())
	covered := map[ItemKey]bool{}
	var active []*State
	for _, s := range d.States {
		cov := audit.ReviewerCoverage{Reviewer: s.Reviewer}
		var pairs []audit.VerdictPair
		for _, k := range slices.SortedFunc(maps.Keys(s.Items), compareKeys) {
			e := s.Items[k]
			typ, judged, valid, ok := c.ItemInfo(k)
			if !ok {
				continue // not in this corpus (any more)
			}
			covered[k] = true
			cov.Decided++
			switch e.Action {
			case ActionAccept:
				cov.Accepted++
			case ActionReject:
				cov.Rejected++
			case ActionEdit:
				cov.Edited++
			}
			if judged {
				pairs = append(pairs, audit.VerdictPair{Type: typ, A: valid, B: e.Action == ActionAccept})
			}
		}
		for _, id := range slices.Sorted(maps.Keys(s.Flagged)) {
			if f, ok := s.Flag(id); ok {
				cov.Flagged++
				r.Flagged = append(r.Flagged, audit.FlaggedRecord{Record: id, Reviewer: s.Reviewer, Reason: f.Reason, Time: f.Time})
			}
		}
		if cov.Decided == 0 && cov.Flagged == 0 {
			continue
		}
		active = append(active, s)
		r.Reviewers = append(r.Reviewers, cov)
		r.VsJudge = append(r.VsJudge, audit.CompareVerdicts("stored judge", s.Reviewer, pairs))
	}
	slices.SortStableFunc(r.Flagged, func(a, b audit.FlaggedRecord) int {
		return cmp.Or(cmp.Compare(a.Record, b.Record), cmp.Compare(a.Reviewer, b.Reviewer))
	})
	r.Covered = len(covered)
	for i, a := range active {
		for _, b := range active[i+1:] {
			r.Between = append(r.Between, between(c, a, b))
		}
	}
	return r
}

// between is the agreement of two reviewers on the items both decided.
func between(c *Corpus, a, b *State) *audit.Agreement {
	var pairs []audit.VerdictPair
	for _, k := range slices.SortedFunc(maps.Keys(a.Items), compareKeys) {
		eb, ok := b.Items[k]
		typ, _, _, in := c.ItemInfo(k)
		if ok && in {
			pairs = append(pairs, audit.VerdictPair{Type: typ, A: a.Items[k].Action == ActionAccept, B: eb.Action == ActionAccept})
		}
	}
	return audit.CompareVerdicts(a.Reviewer, b.Reviewer, pairs)
}

// Labels are the review's decisions as people's labels of the validity
// judge (validate's judge-reliability section): one per rubric item some
// reviewer decided, valid when accepted as written, with the text it was
// decided on. An item reviewers decided differently on that count is left
// out and counted in disputed. Grounded criteria are left out: the
// section is about rubric items.
func Labels(d *Decisions) (anns []audit.Annotation, disputed int) {
	for _, k := range slices.SortedFunc(maps.Keys(d.byItem), compareKeys) {
		es := d.byItem[k]
		if k.Question > 0 || len(es) == 0 || es[0].Before == nil {
			continue
		}
		valid := es[0].Action == ActionAccept
		agreed := true
		for _, e := range es[1:] {
			agreed = agreed && (e.Action == ActionAccept) == valid
		}
		if !agreed {
			disputed++
			continue
		}
		anns = append(anns, audit.Annotation{RecordID: k.Record, ItemID: k.Item, Text: es[0].Before.Text, Verdict: &valid})
	}
	return anns, disputed
}
