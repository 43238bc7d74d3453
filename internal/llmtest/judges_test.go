package llmtest

import (
	"math"
	"strconv"
	"testing"
)

// TestJudgeProfileErrorRates: a profiled judge errs at its configured
// rates against the truth, its position bias shows for invalid items only,
// and a model without a profile says the truth.
func TestJudgeProfileErrorRates(t *testing.T) {
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
