package judgestats

import "math"

// Z95 is the standard normal quantile of a two-sided 95% interval.
const Z95 = 1.959963984540054

// Interval is a closed interval [Low, High] within [0, 1].
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Wilson is the Wilson score interval of k successes in n trials at normal
// quantile z. ok is false when n is 0 (nothing to estimate from).
func Wilson(k, n int64, z float64) (iv Interval, ok bool) {
	if n <= 0 {
		return Interval{}, false
	}
	fn, fk, z2 := float64(n), float64(k), z*z
	centre := (fk + z2/2) / (fn + z2)
	half := z / (fn + z2) * math.Sqrt(fk*(fn-fk)/fn+z2/4)
	return Interval{clip01(centre - half), clip01(centre + half)}, true
}

// Table counts a judge's verdicts against people's on the same items, the
// people taken as the truth and "valid" as the positive class.
type Table struct {
	ValidValid     int64 `json:"people_valid_judge_valid"`     // true positives
	ValidInvalid   int64 `json:"people_valid_judge_invalid"`   // false negatives
	InvalidValid   int64 `json:"people_invalid_judge_valid"`   // false positives
	InvalidInvalid int64 `json:"people_invalid_judge_invalid"` // true negatives
}

// Add counts one item by people's verdict and the judge's.
func (t *Table) Add(people, judge bool) {
	switch {
	case people && judge:
		t.ValidValid++
	case people:
		t.ValidInvalid++
	case judge:
		t.InvalidValid++
	default:
		t.InvalidInvalid++
	}
}

// PeopleValid is how many items people called valid (m1).
func (t Table) PeopleValid() int64 { return t.ValidValid + t.ValidInvalid }

// PeopleInvalid is how many items people called invalid (m0).
func (t Table) PeopleInvalid() int64 { return t.InvalidValid + t.InvalidInvalid }

// Labelled is how many items both people and the judge gave a verdict.
func (t Table) Labelled() int64 { return t.PeopleValid() + t.PeopleInvalid() }

// Sensitivity is the share of the items people called valid that the
// judge called valid too; ok is false when people called none valid.
func (t Table) Sensitivity() (se float64, ok bool) {
	return share(t.ValidValid, t.PeopleValid())
}

// Specificity is the share of the items people called invalid that the
// judge called invalid too; ok is false when people called none invalid.
func (t Table) Specificity() (sp float64, ok bool) {
	return share(t.InvalidInvalid, t.PeopleInvalid())
}

// betterThanChance reports Se + Sp > 1 exactly, on the counts:
// TP/m1 + TN/m0 > 1  <=>  TP·m0 + TN·m1 > m1·m0 (m0, m1 > 0).
func (t Table) betterThanChance() bool {
	m1, m0 := t.PeopleValid(), t.PeopleInvalid()
	return t.ValidValid*m0+t.InvalidInvalid*m1 > m1*m0
}

// Undefined says why a corrected rate could not be estimated.
type Undefined string

// The reasons a corrected rate is undefined.
const (
	NoJudgedItems      Undefined = "no_judged_items"       // the corpus holds no judged item of the kind
	NoLabels           Undefined = "no_labels"             // people labelled no item of the kind
	NoPeopleValid      Undefined = "no_people_valid"       // sensitivity unknown
	NoPeopleInvalid    Undefined = "no_people_invalid"     // specificity unknown
	NoBetterThanChance Undefined = "no_better_than_chance" // Se + Sp <= 1
)

// Explain says what the reason means, in words for a report.
func (u Undefined) Explain() string {
	switch u {
	case NoJudgedItems:
		return "the corpus holds no judged item"
	case NoLabels:
		return "people labelled no item"
	case NoPeopleValid:
		return "people called no item valid, so the judge's sensitivity is unknown"
	case NoPeopleInvalid:
		return "people called no item invalid, so the judge's specificity is unknown"
	case NoBetterThanChance:
		return "the judge is no better than chance against people (sensitivity + specificity <= 1), so its verdicts cannot be corrected"
	}
	return string(u)
}

// Corrected is the validity rate corrected for the judge's errors.
type Corrected struct {
	Rate float64  // Rogan-Gladen, clipped to [0, 1]
	CI   Interval // 95% (at the z given), see the package comment
	// Clipped is true when the unclipped estimate fell outside [0, 1]: the
	// raw rate is one the measured error rates cannot produce.
	Clipped bool
	// Wide is true when the adjusted Youden index is not positive, so the
	// interval is [0, 1].
	Wide bool
}

// Correct estimates the true validity rate from the judge's raw counts on
// the corpus (valid of judged) and its table against people. It returns
// the reason instead when the estimate is undefined.
func Correct(valid, judged int64, t Table, z float64) (Corrected, Undefined) {
	switch {
	case judged <= 0:
		return Corrected{}, NoJudgedItems
	case t.Labelled() == 0:
		return Corrected{}, NoLabels
	case t.PeopleValid() == 0:
		return Corrected{}, NoPeopleValid
	case t.PeopleInvalid() == 0:
		return Corrected{}, NoPeopleInvalid
	case !t.betterThanChance():
		return Corrected{}, NoBetterThanChance
	}
	p := float64(valid) / float64(judged)
	se, _ := t.Sensitivity()
	sp, _ := t.Specificity()
	raw := rg(p, se, sp)
	c := Corrected{Rate: clip01(raw), Clipped: raw < 0 || raw > 1}
	c.CI, c.Wide = interval(valid, judged, t, z)
	c.CI.Low = math.Min(c.CI.Low, c.Rate)
	c.CI.High = math.Max(c.CI.High, c.Rate)
	return c, ""
}

// rg is the Rogan-Gladen estimate; the caller ensures se + sp > 1.
func rg(p, se, sp float64) float64 { return (p + sp - 1) / (se + sp - 1) }

// interval is the delta-method interval at adjusted proportions (see the
// package comment); wide is true when it is [0, 1] because the adjusted
// Youden index is not positive.
func interval(valid, judged int64, t Table, z float64) (iv Interval, wide bool) {
	z2 := z * z
	adj := func(k, n int64) (prop, size float64) {
		size = float64(n) + z2
		return (float64(k) + z2/2) / size, size
	}
	p, n := adj(valid, judged)
	se, m1 := adj(t.ValidValid, t.PeopleValid())
	sp, m0 := adj(t.InvalidInvalid, t.PeopleInvalid())
	j := se + sp - 1
	if j <= 0 {
		return Interval{0, 1}, true
	}
	theta := clip01(rg(p, se, sp))
	v := (p*(1-p)/n + theta*theta*se*(1-se)/m1 + (1-theta)*(1-theta)*sp*(1-sp)/m0) / (j * j)
	half := z * math.Sqrt(v)
	return Interval{clip01(theta - half), clip01(theta + half)}, false
}

func share(k, n int64) (float64, bool) {
	if n <= 0 {
		return 0, false
	}
	return float64(k) / float64(n), true
}

func clip01(x float64) float64 { return math.Max(0, math.Min(1, x)) }
