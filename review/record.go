package review

import (
	"github.com/rubricforge/rubricforge/schema"
)

// Shown rollouts: a page shows a few of a record's rollouts, each cut to a
// length a person reads.
const (
	shownPerSide    = 2    // correct ones, and as many flawed ones
	shownRolloutLen = 6000 // characters of one rollout's text
)

// CriterionType is the type a grounded criterion is counted under in the
// review's figures (criteria have no item type).
const CriterionType = "criterion"

// Record is one record as a page shows it: read whole from the corpus when
// it is shown, with a few of its rollouts.
type Record struct {
	// ID names the record in the queue: a record's id, or for a verl
	// export's grounded question its question id (its items' keys name
	// its passage's record).
	ID, Source, Split, Style string
	Problem, Answer          string
	Reference                string
	NCorrect, NRollouts      int
	PassRate                 float64
	Rollouts                 []schema.Rollout // the shown ones, text cut
	// A grounded record's passage and questions; its Items are the
	// criteria of its questions, in order.
	Title, Passage string
	Questions      []Question
	Items          []Item
	Risk           int // the largest risk of its items
}

// Question is one question of a grounded record.
type Question struct {
	Index int32 // from 0
	Text  string
}

// Item is one rubric item (or grounded criterion) with the figures a
// reviewer weighs. A criterion is an Item whose ID is its position in its
// question, Type "", Text its description, SatRate its mean score as a
// fraction of its weight and EmpiricalValid whether that score varies
// over the closed-book answers.
type Item struct {
	schema.Item
	Key ItemKey
	// Name is a criterion's name (its id in CriterionID); "" for a math
	// item.
	Name, CriterionID string
	// Edge is the discrimination edge: good-side satisfaction among the
	// correct rollouts minus among the flawed ones; nil when either side
	// has no satisfaction verdicts.
	Edge *float64
	Risk int
	// Why lists the reasons of Risk, for the page.
	Why []string
}

// Item is the item k names, or nil.
func (r *Record) Item(k ItemKey) *Item {
	for i := range r.Items {
		if r.Items[i].Key == k {
			return &r.Items[i]
		}
	}
	return nil
}

// newRecord keeps what a page shows of rec and measures its items; id is
// its name in the queue.
func newRecord(id string, rec *schema.Record) *Record {
	r := &Record{ID: id, Source: rec.Source, Split: rec.Split, Style: rec.Style, Problem: rec.Problem, Answer: rec.Answer,
		NCorrect: int(rec.NCorrect), NRollouts: len(rec.Rollouts), PassRate: rec.PassRate}
	if rec.Reference != nil {
		r.Reference = *rec.Reference
	}
	r.Rollouts = shownRollouts(rec.Rollouts)
	for _, it := range rec.Rubric {
		item := Item{Item: it, Key: ItemKey{Record: rec.ID, Item: it.ID}, Edge: edgeOf(it, rec.Rollouts)}
		item.Risk, item.Why = riskOf(&item)
		r.Risk = max(r.Risk, item.Risk)
		r.Items = append(r.Items, item)
	}
	if g := rec.Grounded; g != nil {
		r.Style = schema.StyleGrounded
		r.Title, r.Passage = g.Title, g.Passage
		for _, q := range g.Questions {
			r.Questions = append(r.Questions, Question{Index: q.Index, Text: q.Question})
			for i, c := range q.Criteria {
				item := criterionItem(ItemKey{Record: rec.ID, Question: q.Index + 1, Item: int32(i + 1)}, c)
				r.Risk = max(r.Risk, item.Risk)
				r.Items = append(r.Items, item)
			}
		}
	}
	return r
}

// criterionItem is a grounded criterion as an item.
func criterionItem(k ItemKey, c schema.Criterion) Item {
	it := Item{Key: k, Name: c.Name, CriterionID: c.ID, Item: schema.Item{ID: k.Item, Text: c.Description, Weight: c.Weight, Polarity: 1,
		Valid: c.Valid, ValidReason: c.ValidReason, SatRate: c.ScoreMean, EmpiricalValid: c.Varies}}
	it.Risk, it.Why = criterionRisk(c.Valid, c.Varies)
	return it
}

// criterionRisk scores how likely a criterion is to be wrong, and says
// why: the judge said invalid (2); its score is the same on every
// closed-book answer, so it gives no training signal (2).
func criterionRisk(valid, varies *bool) (int, []string) {
	return criterionRiskWhy(valid, varies, true)
}

// criterionRiskWhy is criterionRisk, with the reasons only when explain.
func criterionRiskWhy(valid, varies *bool, explain bool) (int, []string) {
	risk := 0
	var why []string
	because := func(points int, reason string) {
		risk += points
		if explain {
			why = append(why, reason)
		}
	}
	if valid != nil && !*valid {
		because(2, "judge said invalid")
	}
	if varies != nil && !*varies {
		because(2, "no training signal (its score never varies)")
	}
	return risk, why
}

// shownRollouts picks the first correct and flawed rollouts, texts cut.
func shownRollouts(all []schema.Rollout) []schema.Rollout {
	var out []schema.Rollout
	correct, flawed := 0, 0
	for _, ro := range all {
		switch {
		case ro.Correct && correct < shownPerSide:
			correct++
		case !ro.Correct && flawed < shownPerSide:
			flawed++
		default:
			continue
		}
		if r := []rune(ro.Text); len(r) > shownRolloutLen {
			ro.Text = string(r[:shownRolloutLen]) + " [...]"
		}
		ro.Satisfaction = nil
		out = append(out, ro)
	}
	return out
}

// edgeOf is the item's discrimination edge over the rollouts' satisfaction
// verdicts: the good-side rate among the correct minus among the flawed,
// where the good side of a PITFALL is not satisfying it.
func edgeOf(it schema.Item, rollouts []schema.Rollout) *float64 {
	var good, n [2]int // [0] correct, [1] flawed
	for _, ro := range rollouts {
		side := 1
		if ro.Correct {
			side = 0
		}
		for _, s := range ro.Satisfaction {
			if s.ID != it.ID {
				continue
			}
			n[side]++
			if s.Satisfied == (it.Polarity >= 0) {
				good[side]++
			}
		}
	}
	if n[0] == 0 || n[1] == 0 {
		return nil
	}
	e := float64(good[0])/float64(n[0]) - float64(good[1])/float64(n[1])
	return &e
}

// LowEdge is the edge under which an item separates too little.
const LowEdge = 0.1

// riskOf scores how likely an item is to be wrong, and says why.
func riskOf(it *Item) (int, []string) {
	return itemRisk(it.Valid, it.EmpiricalValid, it.Edge)
}

// itemRisk scores how likely an item is to be wrong, and says why: the
// judge and the empirical rule disagree (3), the judge said invalid (2),
// the empirical rule said invalid (2), the edge is low (1).
func itemRisk(valid, empirical *bool, edge *float64) (int, []string) {
	return itemRiskWhy(valid, empirical, edge, true)
}

// itemRiskWhy is itemRisk, with the reasons only when explain (the
// index keeps none, and a corpus's start should not make them).
func itemRiskWhy(valid, empirical *bool, edge *float64, explain bool) (int, []string) {
	risk := 0
	var why []string
	because := func(points int, reason string) {
		risk += points
		if explain {
			why = append(why, reason)
		}
	}
	if valid != nil && empirical != nil && *valid != *empirical {
		because(3, "judge and empirical figures disagree")
	}
	if valid != nil && !*valid {
		because(2, "judge said invalid")
	}
	if empirical != nil && !*empirical {
		because(2, "empirically invalid")
	}
	if edge != nil && *edge < LowEdge {
		because(1, "low edge")
	}
	return risk, why
}
