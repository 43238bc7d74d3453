package audit

import (
	"maps"
	"slices"

	"github.com/rubricforge/rubricforge/schema"
)

// Agreement compares two sets of binary verdicts on the same items, in the
// layout of seed 000's Table 6: agreement rate and Cohen's kappa, with the
// confusion counts they come from. A is the reference (the stored judge), B
// the other (another judge, people, the empirical rule).
type Agreement struct {
	A           string          `json:"a"`
	B           string          `json:"b"`
	Items       int64           `json:"items"`
	Agree       int64           `json:"agree"`
	Rate        *float64        `json:"agreement"`
	Kappa       *float64        `json:"kappa"` // null when chance agreement is 1 (both constant and equal)
	Scale       string          `json:"kappa_scale"`
	BothValid   int64           `json:"both_valid"`
	BothInvalid int64           `json:"both_invalid"`
	OnlyAValid  int64           `json:"only_a_valid"`
	OnlyBValid  int64           `json:"only_b_valid"`
	AValidRate  *float64        `json:"a_valid_rate"`
	BValidRate  *float64        `json:"b_valid_rate"`
	ByType      []TypeAgreement `json:"by_type"`
}

// TypeAgreement is the agreement on the items of one type.
type TypeAgreement struct {
	Type  string   `json:"type"`
	Items int64    `json:"items"`
	Agree int64    `json:"agree"`
	Rate  *float64 `json:"agreement"`
	Kappa *float64 `json:"kappa"`
}

// confusion counts pairs of verdicts: [a][b], index 0 for valid, 1 for invalid.
type confusion [2][2]int64

func idx(valid bool) int {
	if valid {
		return 0
	}
	return 1
}

func (c *confusion) add(a, b bool) { c[idx(a)][idx(b)]++ }

func (c *confusion) merge(o confusion) {
	for i := range 2 {
		for j := range 2 {
			c[i][j] += o[i][j]
		}
	}
}

func (c confusion) n() int64     { return c[0][0] + c[0][1] + c[1][0] + c[1][1] }
func (c confusion) agree() int64 { return c[0][0] + c[1][1] }

// kappa is Cohen's kappa: (p_o - p_e) / (1 - p_e), where p_o is the observed
// agreement and p_e the agreement expected by chance from each side's own
// rate of "valid". It is nil when there are no pairs or p_e is 1.
func (c confusion) kappa() *float64 {
	n := float64(c.n())
	if n == 0 {
		return nil
	}
	po := float64(c.agree()) / n
	pa := float64(c[0][0]+c[0][1]) / n
	pb := float64(c[0][0]+c[1][0]) / n
	pe := pa*pb + (1-pa)*(1-pb)
	if pe >= 1 {
		return nil
	}
	k := (po - pe) / (1 - pe)
	return &k
}

// kappaScale names a kappa on the Landis-Koch scale.
func kappaScale(k *float64) string {
	switch {
	case k == nil:
		return "undefined"
	case *k < 0:
		return "poor"
	case *k <= 0.20:
		return "slight"
	case *k <= 0.40:
		return "fair"
	case *k <= 0.60:
		return "moderate"
	case *k <= 0.80:
		return "substantial"
	}
	return "almost perfect"
}

// agreementOf builds the Agreement of the overall counts c and the counts
// by item type.
func agreementOf(a, b string, c confusion, byType map[string]*confusion) *Agreement {
	k := c.kappa()
	ag := &Agreement{
		A: a, B: b, Items: c.n(), Agree: c.agree(), Rate: ratio(c.agree(), c.n()), Kappa: k, Scale: kappaScale(k),
		BothValid: c[0][0], BothInvalid: c[1][1], OnlyAValid: c[0][1], OnlyBValid: c[1][0],
		AValidRate: ratio(c[0][0]+c[0][1], c.n()), BValidRate: ratio(c[0][0]+c[1][0], c.n()),
		ByType: []TypeAgreement{},
	}
	for _, t := range typeOrder(slices.Collect(maps.Keys(byType))) {
		tc := *byType[t]
		ag.ByType = append(ag.ByType, TypeAgreement{Type: t, Items: tc.n(), Agree: tc.agree(), Rate: ratio(tc.agree(), tc.n()), Kappa: tc.kappa()})
	}
	return ag
}

// typeOrder sorts item types as schema.ItemTypes lists them, unknown ones
// after, by name.
func typeOrder(types []string) []string {
	rank := func(t string) int {
		if i := slices.Index(schema.ItemTypes, t); i >= 0 {
			return i
		}
		return len(schema.ItemTypes)
	}
	slices.SortFunc(types, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	return types
}
