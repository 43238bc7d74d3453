package reward

import "github.com/rubricforge/rubricforge/schema"

// UnseenPitfalls are the verdicts on a response a judge was shown cut,
// the bytes hiddenFrom to hiddenTo of it left out (a response over the
// judge's response budget is shown head and tail): every PITFALL counts as
// fallen into, since the part the judge did not see may hold it, so that a
// response earns nothing by being too long to show. A pitfall the judge saw
// keeps its step; one it called absent gets the step the hidden part
// starts in (0 when that is before any step). The other verdicts stay:
// what the judge saw it saw. verdicts are one per item, in item order;
// they are changed in place and returned.
func UnseenPitfalls(verdicts []schema.Satisfaction, items []schema.Item, hiddenFrom, hiddenTo int, steps []StepSpan) []schema.Satisfaction {
	if hiddenFrom >= hiddenTo {
		return verdicts
	}
	hidden := int32(0)
	for _, s := range steps {
		if s.ByteEnd > hiddenFrom && s.ByteStart < hiddenTo {
			hidden = s.Step
			break
		}
	}
	for i, it := range items {
		if i >= len(verdicts) || !(it.Polarity < 0 || it.Weight < 0) || verdicts[i].Satisfied {
			continue
		}
		verdicts[i].Satisfied, verdicts[i].Step = true, hidden
	}
	return verdicts
}
