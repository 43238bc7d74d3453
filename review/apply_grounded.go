package review

import (
	"github.com/rubricforge/rubricforge/schema"
)

// applyGrounded applies the settled decisions to a grounded record's
// criteria: a rejected criterion is dropped with its scores in every
// answer; an edit of its description drops the figures measured on the old
// text (its mean score and whether it varies) and the scores of its
// question's answers, which were judged against every criterion at once
// and cannot be kept for the others alone; an edit of the weight alone
// keeps them, each score scaled to the new weight. Accepted and edited
// criteria are marked valid. A question left without criteria of positive
// total weight is dropped; the record holds while a question remains.
func (a *Applier) applyGrounded(rec *schema.Record) bool {
	if !a.touchesGrounded(rec) {
		return true
	}
	g := *rec.Grounded
	g.Questions = nil
	for _, q := range rec.Grounded.Questions {
		q, touched := a.applyQuestion(rec.ID, q)
		if touched && schema.TotalWeight(q.Criteria) <= 0 {
			continue
		}
		g.Questions = append(g.Questions, q)
	}
	rec.Grounded = &g
	if len(g.Questions) == 0 {
		a.sum.RecordsDropped++
		return false
	}
	return true
}

// applyQuestion applies the decisions on the criteria of question q of
// record id; touched reports whether any applied.
func (a *Applier) applyQuestion(id string, q schema.GroundedQuestion) (schema.GroundedQuestion, bool) {
	var kept []schema.Criterion
	var keep []int       // the old positions kept, in order
	scale := []float64{} // each kept criterion's score factor
	rescore := false     // the answers' scores no longer hold
	touched := false
	for i, c := range q.Criteria {
		k := ItemKey{Record: id, Question: q.Index + 1, Item: int32(i + 1)}
		e, ok := a.settled(k, ItemState{Text: c.Description, Weight: c.Weight})
		if !ok {
			kept, keep, scale = append(kept, c), append(keep, i), append(scale, 1)
			continue
		}
		touched = true
		f := 1.0
		switch e.Action {
		case ActionReject:
			continue
		case ActionAccept:
			c = reviewedCriterion(c, "accepted in review by "+a.names(k))
		case ActionEdit:
			if e.After.Text != c.Description {
				c.ScoreMean, c.Varies = nil, nil
				rescore = true
			} else if c.Weight > 0 {
				f = e.After.Weight / c.Weight
			}
			c.Description, c.Weight = e.After.Text, e.After.Weight
			c = reviewedCriterion(c, "edited in review by "+a.names(k))
		}
		kept, keep, scale = append(kept, c), append(keep, i), append(scale, f)
	}
	if !touched {
		return q, false
	}
	n := len(q.Criteria)
	q.Criteria = kept
	q.Answers = rescored(q.Answers, n, keep, scale, rescore)
	q.OpenBookAnswers = rescored(q.OpenBookAnswers, n, keep, scale, rescore)
	return q, true
}

// rescored is answers with each answer's scores (one per criterion of n)
// kept at the positions keep, scaled; all of them dropped when drop.
func rescored(answers []schema.GroundedAnswer, n int, keep []int, scale []float64, drop bool) []schema.GroundedAnswer {
	if answers == nil {
		return nil
	}
	out := make([]schema.GroundedAnswer, len(answers))
	for i, ans := range answers {
		scores := []float64{}
		if !drop && len(ans.Scores) == n {
			for j, old := range keep {
				scores = append(scores, ans.Scores[old]*scale[j])
			}
		}
		ans.Scores = scores
		out[i] = ans
	}
	return out
}

// touchesGrounded reports whether a settled decision names a criterion of
// rec.
func (a *Applier) touchesGrounded(rec *schema.Record) bool {
	for _, q := range rec.Grounded.Questions {
		for i := range q.Criteria {
			if _, ok := a.decided[ItemKey{Record: rec.ID, Question: q.Index + 1, Item: int32(i + 1)}]; ok {
				return true
			}
		}
	}
	return false
}

// reviewedCriterion marks c valid by a person.
func reviewedCriterion(c schema.Criterion, why string) schema.Criterion {
	valid := true
	if c.ValidReason != nil && *c.ValidReason != "" {
		why += "; the judge said: " + *c.ValidReason
	}
	c.Valid, c.ValidReason = &valid, &why
	return c
}
