package audit

import (
	"github.com/rubricforge/rubricforge/judgestats"
)

// OrderCheck is what validate rejudge --order-check adds to its report:
// every judged item of the drawn records asked twice, in rubric order and
// reversed, and how often the verdict changed, by judge (and the panel's,
// with a panel) and item type.
type OrderCheck struct {
	Records int          `json:"records"` // records drawn
	Items   int          `json:"items"`   // their judged items
	Judges  []OrderJudge `json:"judges"`
}

// OrderJudge is one judge's flip rates ("panel" for the panel's verdict).
type OrderJudge struct {
	Judge  string     `json:"judge"`
	ByType []FlipRate `json:"by_type"` // all types first
}

// FlipRate counts, over the items of one type a judge answered in both
// orders, those whose verdict differs between the two (Flips), with a 95%
// Wilson interval of the share. A flipped item was shown earlier in one
// order than in the other: ValidEarlier counts the flips where it was
// called valid in the order that showed it earlier, ValidLater the others
// (an item in the middle of an odd number sits at the same place both
// times and counts in neither). A judge that favours what it sees first
// has ValidEarlier well above ValidLater. Bias is (ValidEarlier -
// ValidLater)/Items, the share of items called valid only where shown
// earlier minus the share called valid only where shown later, with its
// 95% interval for a paired difference (judgestats.PairedDifference): a
// judge without a position bias measures 0 inside it, one that favours
// what comes first a positive bias, what comes last a negative one.
type FlipRate struct {
	Type         string               `json:"type"`
	Items        int64                `json:"items"`
	Flips        int64                `json:"flips"`
	Rate         *float64             `json:"flip_rate"`
	Interval     *judgestats.Interval `json:"interval"`
	ValidEarlier int64                `json:"valid_when_earlier"`
	ValidLater   int64                `json:"valid_when_later"`
	Bias         *float64             `json:"position_bias"`
	BiasInterval *judgestats.Interval `json:"position_bias_interval"`
}

// flipCounter gathers flip counts by type, "all" included.
type flipCounter map[string]*FlipRate

// add counts one item at position pos of n in rubric order, with its
// verdicts in rubric order (forward) and reversed.
func (c flipCounter) add(typ string, pos, n int, forward, reversed bool) {
	for _, t := range []string{"all", typ} {
		f := c[t]
		if f == nil {
			f = &FlipRate{Type: t}
			c[t] = f
		}
		f.Items++
		if forward == reversed {
			continue
		}
		f.Flips++
		back := n - 1 - pos
		switch {
		case pos < back && forward, pos > back && reversed:
			f.ValidEarlier++
		case pos != back:
			f.ValidLater++
		}
	}
}

// rates lists the counts, all types first, with their intervals.
func (c flipCounter) rates() []FlipRate {
	types := make([]string, 0, len(c))
	for t := range c {
		if t != "all" {
			types = append(types, t)
		}
	}
	out := []FlipRate{}
	for _, t := range append([]string{"all"}, typeOrder(types)...) {
		f := c[t]
		if f == nil {
			continue
		}
		f.Rate = ratio(f.Flips, f.Items)
		if iv, ok := judgestats.Wilson(f.Flips, f.Items, judgestats.Z95); ok {
			f.Interval = &iv
		}
		if d, iv, ok := judgestats.PairedDifference(f.ValidEarlier, f.ValidLater, f.Items, judgestats.Z95); ok {
			f.Bias, f.BiasInterval = &d, &iv
		}
		out = append(out, *f)
	}
	return out
}

// orderCheck compares each judge's verdicts (and the panel's) in the two
// orders.
func orderCheck(x *Rejudged) *OrderCheck {
	oc := &OrderCheck{Records: len(x.Groups)}
	for _, g := range x.Groups {
		oc.Items += len(g)
	}
	for k, j := range x.Judges {
		c := flipCounter{}
		for gi, g := range x.Groups {
			a, b := x.Forward[gi][k], x.Reversed[gi][k]
			if a.Items == nil || b.Items == nil {
				continue
			}
			for i, it := range g {
				c.add(it.Type, i, len(g), a.Items[i].Other, b.Items[i].Other)
			}
		}
		oc.Judges = append(oc.Judges, OrderJudge{Judge: j.Name, ByType: c.rates()})
	}
	if x.Panel {
		c := flipCounter{}
		for gi, g := range x.Groups {
			a, okA := panelVerdicts(g, x.Forward[gi])
			b, okB := panelVerdicts(g, x.Reversed[gi])
			if !okA || !okB {
				continue
			}
			for i, it := range g {
				c.add(it.Type, i, len(g), a[i].pair.Other, b[i].pair.Other)
			}
		}
		oc.Judges = append(oc.Judges, OrderJudge{Judge: "panel", ByType: c.rates()})
	}
	return oc
}
