package judge

import (
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// unseenPitfalls are the verdicts on a response the judge was shown as
// shown says: when it was cut, every PITFALL counts as fallen into
// (reward.UnseenPitfalls).
func unseenPitfalls(verdicts []schema.Satisfaction, items []schema.Item, shown prompts.Shown, steps []reward.StepSpan) []schema.Satisfaction {
	if !shown.Cut {
		return verdicts
	}
	return reward.UnseenPitfalls(verdicts, items, shown.HiddenFrom, shown.HiddenTo, steps)
}
