package judge

import (
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// unseenPitfalls are the verdicts on a response the judge was shown cut
// (shown.Cut: its middle left out to fit JudgeOptions.MaxResponseTokens):
// every PITFALL counts as fallen into, since the part the judge did not
// see may hold it, so a response earns nothing by being too long to show.
// A pitfall the judge saw keeps its step; one it called absent gets the
// step the hidden part starts in (0 when that is before any step). The
// other verdicts stay: what the judge saw it saw.
func unseenPitfalls(verdicts []schema.Satisfaction, items []schema.Item, shown prompts.Shown, steps []reward.StepSpan) []schema.Satisfaction {
	if !shown.Cut {
		return verdicts
	}
	hidden := hiddenStep(shown, steps)
	for i, it := range items {
		if i >= len(verdicts) || !(it.Polarity < 0 || it.Weight < 0) || verdicts[i].Satisfied {
			continue
		}
		verdicts[i].Satisfied, verdicts[i].Step = true, hidden
	}
	return verdicts
}

// hiddenStep is the step the hidden part of a cut response starts in: the
// first step span that reaches into it, else 0.
func hiddenStep(shown prompts.Shown, steps []reward.StepSpan) int32 {
	for _, s := range steps {
		if s.ByteEnd > shown.HiddenFrom && s.ByteStart < shown.HiddenTo {
			return s.Step
		}
	}
	return 0
}
