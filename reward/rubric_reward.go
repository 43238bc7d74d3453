package reward

import "github.com/rubricforge/rubricforge/schema"

// RubricReward is not written yet.
func RubricReward(p Params, scheme string, items []schema.Item, verdicts []schema.Satisfaction, valid []bool) float64 {
	return 0
}
