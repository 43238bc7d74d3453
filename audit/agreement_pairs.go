package audit

// VerdictPair is one item's two binary verdicts, A's and B's ("valid" or
// not: for a person, accepted or edited against rejected), with the item's
// type for the figures by type.
type VerdictPair struct {
	Type string
	A, B bool
}

// CompareVerdicts is the agreement and Cohen's kappa of a and b over pairs,
// overall and by item type: the figures `validate agreement` reports, for
// other sources of verdicts (people's review logs).
func CompareVerdicts(a, b string, pairs []VerdictPair) *Agreement {
	var all confusion
	byType := map[string]*confusion{}
	for _, p := range pairs {
		all.add(p.A, p.B)
		c := byType[p.Type]
		if c == nil {
			c = &confusion{}
			byType[p.Type] = c
		}
		c.add(p.A, p.B)
	}
	return agreementOf(a, b, all, byType)
}
