package judgestats

import (
	"math/rand/v2"
	"testing"
)

// scenario is a planted truth: a corpus of n judged items whose true
// validity rate is theta, a judge with the given sensitivity and
// specificity, and m of the corpus's items labelled by people.
type scenario struct {
	name          string
	theta, se, sp float64
	n, m          int
	maxWidth      float64 // the mean interval width allowed: [0, 1] always covers
}

// simulate draws one corpus and one people's sample from s: each item is
// truly valid with probability theta, the judge calls it valid with
// probability se when it is and 1-sp when it is not, and people label the
// first m items (the items are exchangeable, so these are a random sample)
// with the truth. It returns the judge's raw counts and the table.
func (s scenario) simulate(r *rand.Rand) (valid, judged int64, t Table) {
	for i := range s.n {
		truth := r.Float64() < s.theta
		judge := r.Float64() < s.sp // judge says invalid when truth is invalid
		if truth {
			judge = r.Float64() < s.se
		} else {
			judge = !judge
		}
		if judge {
			valid++
		}
		if i < s.m {
			t.Add(truth, judge)
		}
	}
	return valid, int64(s.n), t
}

// TestCoverage: over seeded simulated corpora and people's samples, the
// corrected rate's 95% interval holds the planted true rate in at least
// 90% of the trials. A trial whose estimate is undefined (people found no
// invalid item in their sample, say) counts as a miss.
func TestCoverage(t *testing.T) {
	const trials = 1000
	scenarios := []scenario{
		{"typical rubric judge", 0.90, 0.95, 0.70, 1000, 100, 0.25},
		{"mediocre judge", 0.80, 0.90, 0.80, 2000, 200, 0.2},
		{"weak judge, small sample", 0.60, 0.75, 0.70, 500, 60, 0.75},
		{"almost everything valid", 0.95, 0.97, 0.60, 1000, 150, 0.2},
		{"small corpus", 0.85, 0.90, 0.75, 300, 80, 0.4},
		{"near-perfect judge, few invalid items", 0.97, 0.99, 0.90, 5000, 200, 0.1},
	}
	for k, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(k)+1, 31))
			covered, undefined, width := 0, 0, 0.0
			for range trials {
				valid, judged, tab := s.simulate(r)
				c, why := Correct(valid, judged, tab, Z95)
				switch {
				case why != "":
					undefined++
				case c.CI.Low <= s.theta && s.theta <= c.CI.High:
					covered++
				}
				width += c.CI.High - c.CI.Low
			}
			got := float64(covered) / trials
			meanWidth := width / float64(trials-undefined)
			t.Logf("coverage %.3f (%d undefined of %d trials), mean width %.3f", got, undefined, trials, meanWidth)
			if got < 0.90 {
				t.Errorf("the 95%% interval held the true rate %.2f in %.1f%% of %d trials (%d undefined); want at least 90%%",
					s.theta, 100*got, trials, undefined)
			}
			if meanWidth > s.maxWidth {
				t.Errorf("the intervals are %.3f wide on average; want at most %.2f (an interval that always covers tells nothing)", meanWidth, s.maxWidth)
			}
		})
	}
}
