package sim

import (
	"math"
	"strconv"
	"testing"

	"github.com/rubricforge/rubricforge/judgestats"
)

// TestJudgeProfileErrorRates: a profiled judge errs at its configured
// rates against the truth, its position bias shows for invalid items only,
// and a model without a profile says the truth.
func TestJudgeProfileErrorRates(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{Seed: 3}}
	p := &JudgeProfile{FalseValid: 0.1, FalseInvalid: 0.2, FirstBias: 0.3}
	const n = 20000
	var falseValidFirst, falseValidLast, falseInvalidFirst, falseInvalidLast, unprofiledWrong int
	for i := range n {
		item := "item " + strconv.Itoa(i)
		if s.profiledValidity("j", p, false, 0, 5, "prob", item) {
			falseValidFirst++
		}
		if s.profiledValidity("j", p, false, 4, 5, "prob", item) {
			falseValidLast++
		}
		if !s.profiledValidity("j", p, true, 0, 5, "prob", item) {
			falseInvalidFirst++
		}
		if !s.profiledValidity("j", p, true, 4, 5, "prob", item) {
			falseInvalidLast++
		}
		if !s.profiledValidity("other", nil, true, 0, 5, "prob", item) || s.profiledValidity("other", nil, false, 0, 5, "prob", item) {
			unprofiledWrong++
		}
	}
	near := func(name string, count int, want float64) {
		got := float64(count) / n
		if se := math.Sqrt(want * (1 - want) / n); math.Abs(got-want) > 4*se {
			t.Errorf("%s: rate %.4f, want %.2f", name, got, want)
		}
	}
	near("invalid item shown first called valid", falseValidFirst, 0.4)
	near("invalid item shown last called valid", falseValidLast, 0.1)
	near("valid item shown first called invalid", falseInvalidFirst, 0.2)
	near("valid item shown last called invalid", falseInvalidLast, 0.2)
	if unprofiledWrong != 0 {
		t.Errorf("a model without a profile erred %d times", unprofiledWrong)
	}
}

func TestParseJudgeProfile(t *testing.T) {
	t.Parallel()
	model, p, err := ParseJudgeProfile("lenient:false_valid=0.3,first_bias=0.2,fail=0.05")
	if err != nil || model != "lenient" || p != (JudgeProfile{FalseValid: 0.3, FirstBias: 0.2, Fail: 0.05}) {
		t.Fatalf("got %q %+v %v", model, p, err)
	}
	for _, bad := range []string{"nocolon", ":flip=0.1", "m:flip=2", "m:flip=x", "m:wobble=0.1"} {
		if _, _, err := ParseJudgeProfile(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestCorrectedRateCoversTheSimulatedTruth: the simulator's profiled judge
// (30% of invalid items called valid, 20% of valid ones invalid: a raw
// rate near 0.675 for a true 0.75) judges a corpus of 400 items whose true
// validity is the simulator's own verdict (the planted invalid rate 25%);
// people label 120 of them with the truth.
// The corrected rate's 95% interval (judgestats.Correct) covers the
// corpus's true valid rate in at least 90% of 300 seeded trials, and the
// judge's raw rate would not.
func TestCorrectedRateCoversTheSimulatedTruth(t *testing.T) {
	t.Parallel()
	const trials, n, m = 300, 400, 120
	p := &JudgeProfile{FalseValid: 0.3, FalseInvalid: 0.2}
	covered, rawCovered := 0, 0
	for trial := range trials {
		s := &Server{cfg: Config{Seed: uint64(trial) + 1, InvalidRate: 0.25}}
		var valid, trulyValid int64
		var table judgestats.Table
		for i := range n {
			problem, it := "problem "+strconv.Itoa(trial), item{ID: strconv.Itoa(i + 1), Type: "SUGGEST", Text: "item " + strconv.Itoa(i)}
			truth, reason := s.verdict(problem, it)
			said, _ := s.judgedVerdict("judge", p, truth, reason, 0, 1, problem, it.Type, it.Text)
			if said {
				valid++
			}
			if truth {
				trulyValid++
			}
			if i < m {
				table.Add(truth, said)
			}
		}
		theta := float64(trulyValid) / n
		c, undefined := judgestats.Correct(valid, n, table, judgestats.Z95)
		if undefined != "" {
			t.Fatalf("trial %d: %s", trial, undefined)
		}
		if c.CI.Low <= theta && theta <= c.CI.High {
			covered++
		}
		if raw, _ := judgestats.Wilson(valid, n, judgestats.Z95); raw.Low <= theta && theta <= raw.High {
			rawCovered++
		}
	}
	t.Logf("corrected interval covered the truth in %d of %d trials, the raw rate's in %d", covered, trials, rawCovered)
	if covered < trials*9/10 {
		t.Errorf("the corrected interval covered the truth in %d of %d trials; want at least 90%%", covered, trials)
	}
	if rawCovered > trials/2 {
		t.Errorf("the raw rate's interval covered the truth in %d of %d trials: the judge's errors are too small to show a bias", rawCovered, trials)
	}
}
