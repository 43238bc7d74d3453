package reward

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

func TestSRaRDelta(t *testing.T) {
	p := DefaultParams()
	n := CountTypes(rewardtest.SRaRItems())
	if n != (TypeCounts{Suggest: 2, Pitfall: 1, Bonus: 1}) {
		t.Fatalf("CountTypes = %+v", n)
	}
	for _, tc := range []struct {
		typ       string
		satisfied bool
		want      float64
	}{
		{schema.TypeSuggest, true, 0.4}, // R_SUG / N_SUG = 0.8 / 2
		{schema.TypeSuggest, false, 0},
		{schema.TypePitfall, true, -1}, // -|R_PIT| / N_PIT
		{schema.TypePitfall, false, 0},
		{schema.TypeBonus, true, 1},
		{schema.TypeAnswer, true, 0}, // ANSWER carries no delta
		{schema.TypeFactual, true, 0},
		{schema.TypeProcess, true, 0.4}, // counted with SUGGEST
	} {
		if got := SRaRDelta(p, n, tc.typ, tc.satisfied); !rewardtest.Near(got, tc.want) {
			t.Errorf("δ(%s, satisfied=%v) = %v, want %v", tc.typ, tc.satisfied, got, tc.want)
		}
	}
	if got := SRaRDelta(p, TypeCounts{}, schema.TypeSuggest, true); got != 0 {
		t.Errorf("δ with N_SUG = 0 is %v, want 0", got)
	}
}

func TestSRaRDeltas(t *testing.T) {
	items := rewardtest.SRaRItems()
	verdicts := []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, true, 2), rewardtest.Sat(3, true, 2), rewardtest.Sat(4, false, 3), rewardtest.Sat(5, true, 0)}
	got := SRaRDeltas(DefaultParams(), items, verdicts, 3)
	if !rewardtest.Near(got.Suggest, 0.8) || !rewardtest.Near(got.Pitfall, -1) || got.Bonus != 0 || !rewardtest.Near(got.Total(), -0.2) {
		t.Errorf("totals %+v, want suggest 0.8, pitfall -1, bonus 0", got)
	}
	// Step 3 has an unsatisfied item attributed: it is in G_3 with d = 0.
	want := []StepDelta{{1, 0.4}, {2, -0.6}, {3, 0}}
	if len(got.Steps) != len(want) {
		t.Fatalf("steps %+v, want %+v", got.Steps, want)
	}
	for i := range want {
		if got.Steps[i].Step != want[i].Step || !rewardtest.Near(got.Steps[i].D, want[i].D) {
			t.Errorf("step %d: %+v, want %+v", i, got.Steps[i], want[i])
		}
	}
	// A step the response does not have, and steps 0 and -1, are in no step.
	got = SRaRDeltas(DefaultParams(), items, []schema.Satisfaction{rewardtest.Sat(1, true, 7), rewardtest.Sat(2, true, -1), rewardtest.Sat(3, false, 0), rewardtest.Sat(4, true, 1), rewardtest.Sat(5, true, 1)}, 2)
	if len(got.Steps) != 1 || got.Steps[0] != (StepDelta{1, 1}) || !rewardtest.Near(got.Total(), 1.8) {
		t.Errorf("got %+v, want only step 1 with d = 1 and Δ = 1.8", got)
	}
}

func TestBaseReward(t *testing.T) {
	p := DefaultParams()
	for _, tc := range []struct {
		correct, format bool
		want            float64
	}{{true, true, 1}, {true, false, 0.9}, {false, true, 0.1}, {false, false, 0}} {
		if got := BaseReward(p, tc.correct, tc.format); !rewardtest.Near(got, tc.want) {
			t.Errorf("r_base(%v, %v) = %v, want %v", tc.correct, tc.format, got, tc.want)
		}
	}
}

func TestGroupAdvantages(t *testing.T) {
	eps := DefaultParams().Epsilon
	got := GroupAdvantages([]float64{1, 0, 0, 1}, eps) // μ 0.5, σ 0.5
	for i, want := range []float64{0.5 / (0.5 + eps), -0.5 / (0.5 + eps), -0.5 / (0.5 + eps), 0.5 / (0.5 + eps)} {
		if !rewardtest.Near(got[i], want) {
			t.Errorf("A_%d = %v, want %v", i, got[i], want)
		}
	}
	for _, r := range [][]float64{{0.7}, {0.3, 0.3, 0.3}, {}} {
		for i, a := range GroupAdvantages(r, eps) {
			if a != 0 {
				t.Errorf("GroupAdvantages(%v)[%d] = %v, want 0", r, i, a)
			}
		}
	}
}

func TestNormalizeSteps(t *testing.T) {
	eps := DefaultParams().Epsilon
	d := [][]StepDelta{{{1, 0.4}, {2, -0.6}}, {{1, 0}}, {{2, 0.4}, {3, 1}}, nil}
	got := NormalizeSteps(d, eps)
	// Step 1: G_1 = {0, 1}, d = 0.4, 0: μ 0.2, σ 0.2. Step 2: G_2 = {0, 2},
	// d = -0.6, 0.4: μ -0.1, σ 0.5. Step 3: |G_3| = 1, so 0.
	want := [][]StepDelta{{{1, 0.2 / (0.2 + eps)}, {2, -0.5 / (0.5 + eps)}}, {{1, -0.2 / (0.2 + eps)}}, {{2, 0.5 / (0.5 + eps)}, {3, 0}}, {}}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("rollout %d: %+v, want %+v", i, got[i], want[i])
		}
		for j := range want[i] {
			if got[i][j].Step != want[i][j].Step || !rewardtest.Near(got[i][j].D, want[i][j].D) {
				t.Errorf("rollout %d step %d: %v, want %v", i, got[i][j].Step, got[i][j].D, want[i][j].D)
			}
		}
	}
}

// TestNormalizedStepOffsetsSumToZero checks seed 000 Proposition 20.2: the
// normalized offsets of a step sum to zero over its group G_k.
func TestNormalizedStepOffsetsSumToZero(t *testing.T) {
	const seed = 20260517
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	p := DefaultParams()
	items := rewardtest.SRaRItems()
	for trial := range 500 {
		n := 1 + rng.IntN(16)
		d := make([][]StepDelta, n)
		for i := range d {
			steps := rng.IntN(6)
			verdicts := make([]schema.Satisfaction, len(items))
			for j := range verdicts {
				verdicts[j] = rewardtest.Sat(items[j].ID, rng.IntN(2) == 0, int32(rng.IntN(steps+3)-1))
			}
			d[i] = SRaRDeltas(p, items, verdicts, steps).Steps
		}
		sums := map[int32]float64{}
		members := map[int32]int{}
		for _, steps := range NormalizeSteps(d, p.Epsilon) {
			for _, s := range steps {
				sums[s.Step] += s.D
				members[s.Step]++
			}
		}
		for k, s := range sums {
			if math.Abs(s) > 1e-9 {
				t.Fatalf("trial %d: step %d: offsets over |G_k| = %d sum to %v", trial, k, members[k], s)
			}
		}
	}
}

func TestSRaRStepAdvantages(t *testing.T) {
	spans := []StepSpan{{Step: 1}, {Step: 2}, {Step: 3}}
	got := SRaRStepAdvantages(0.5, spans, []StepDelta{{1, 1.25}, {3, -0.75}})
	want := []StepAdvantage{{1, 1.25, 1.75}, {2, 0, 0.5}, {3, -0.75, -0.25}}
	for i := range want {
		if got[i].Step != want[i].Step || !rewardtest.Near(got[i].Offset, want[i].Offset) || !rewardtest.Near(got[i].Advantage, want[i].Advantage) {
			t.Errorf("step %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
}

func TestRGRReward(t *testing.T) {
	items := []schema.Item{rewardtest.Item(1, schema.TypeFactual, 3), rewardtest.Item(2, schema.TypeFactual, 2), rewardtest.Item(3, schema.TypeProcess, 5)}
	for _, tc := range []struct {
		name     string
		verdicts []schema.Satisfaction
		want     float64
		all      bool
	}{
		{"every factual holds", []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, true, 2), rewardtest.Sat(3, false, -1)}, 1, true},
		{"one factual fails", []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, false, -1), rewardtest.Sat(3, true, 2)}, 0.8, false}, // (3+5)/10
		{"nothing holds", []schema.Satisfaction{rewardtest.Sat(1, false, -1), rewardtest.Sat(2, false, -1), rewardtest.Sat(3, false, -1)}, 0, false},
	} {
		got, all := RGRReward(items, tc.verdicts)
		if !rewardtest.Near(got, tc.want) || all != tc.all {
			t.Errorf("%s: RGRReward = %v, %v; want %v, %v", tc.name, got, all, tc.want, tc.all)
		}
	}
	// Without FACTUAL items there is no shortcut to 1; a PITFALL holds when avoided.
	noFactual := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypePitfall, 1)}
	if got, all := RGRReward(noFactual, []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, false, -1)}); got != 1 || all {
		t.Errorf("suggest met, pitfall avoided: %v, %v; want 1, false", got, all)
	}
	if got, _ := RGRReward(noFactual, []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, true, 1)}); !rewardtest.Near(got, 0.5) {
		t.Errorf("suggest met, pitfall fallen into: %v, want 0.5", got)
	}
}

func TestGroundedAndLOO(t *testing.T) {
	items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 2), rewardtest.Item(2, schema.TypeSuggest, 3), rewardtest.Item(3, schema.TypeSuggest, 5)}
	if got := GroundedReward(items, []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, false, 1), rewardtest.Sat(3, true, 1)}); !rewardtest.Near(got, 0.7) {
		t.Errorf("grounded = %v, want 0.7", got)
	}
	eps := DefaultParams().Epsilon
	r := []float64{1, 0.5, 0}
	sigma := math.Sqrt((0.25 + 0 + 0.25) / 3) // population σ around μ = 0.5
	// b_0 = (0.5+0)/2, b_1 = (1+0)/2, b_2 = (1+0.5)/2
	want := []float64{0.75 / (sigma + eps), 0, -0.75 / (sigma + eps)}
	got := LOOAdvantages(r, eps)
	for i := range want {
		if !rewardtest.Near(got[i], want[i]) {
			t.Errorf("LOO A_%d = %v, want %v", i, got[i], want[i])
		}
	}
	if got := LOOAdvantages([]float64{0.9}, eps); got[0] != 0 {
		t.Errorf("LOO of one rollout = %v, want 0", got[0])
	}
}

func TestItemValidity(t *testing.T) {
	f := func(v ...float64) []float64 { return v }
	for _, tc := range []struct {
		name          string
		sat, correct  []float64
		polarity      int32
		corr          *float64
		valid         *bool
		wantRateTimes float64
	}{
		{"follows correctness", f(1, 1, 0, 0), f(1, 1, 0, 0), 1, ptr(1.0), ptr(true), 0.5},
		{"a pitfall the correct ones avoid", f(0, 0, 1, 1), f(1, 1, 0, 0), -1, ptr(1.0), ptr(true), 0.5},
		{"a pitfall the correct ones fall into", f(1, 1, 0, 0), f(1, 1, 0, 0), -1, ptr(-1.0), ptr(false), 0.5},
		{"constant satisfaction", f(1, 1, 1, 1), f(1, 0, 1, 0), 1, nil, ptr(false), 1},
		{"constant correctness", f(1, 0, 1, 0), f(1, 1, 1, 1), 1, nil, nil, 0.5},
		{"weak correlation", f(1, 0, 1, 0, 0), f(1, 1, 0, 0, 0), 1, ptr(1.0 / 6), ptr(false), 0.4},
	} {
		v := ItemValidity(tc.sat, tc.correct, tc.polarity, 0.2)
		if v.SatRate == nil || !rewardtest.Near(*v.SatRate, tc.wantRateTimes) {
			t.Errorf("%s: sat rate %v, want %v", tc.name, v.SatRate, tc.wantRateTimes)
		}
		if (v.Corr == nil) != (tc.corr == nil) || (v.Corr != nil && !rewardtest.Near(*v.Corr, *tc.corr)) {
			t.Errorf("%s: corr %v, want %v", tc.name, deref(v.Corr), deref(tc.corr))
		}
		if (v.Valid == nil) != (tc.valid == nil) || (v.Valid != nil && *v.Valid != *tc.valid) {
			t.Errorf("%s: valid %v, want %v", tc.name, deref(v.Valid), deref(tc.valid))
		}
	}
}

func TestRLCERCoT(t *testing.T) {
	items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypePitfall, 2), rewardtest.Item(3, schema.TypeBonus, 1)}
	verdicts := []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, true, 1), rewardtest.Sat(3, false, -1)}
	// ŝ = +1, -2, +1: MinValue -2, MaxValue 2, Σ = 1 - 2 = -1, norm = 1/4.
	if got := RLCERCoT(items, verdicts, []bool{true, true, true}); !rewardtest.Near(got, 0.25) {
		t.Errorf("r_cot = %v, want 0.25", got)
	}
	// Without the pitfall: MinValue 0, MaxValue 2, Σ = 1, norm = 1/2.
	if got := RLCERCoT(items, verdicts, []bool{true, false, true}); !rewardtest.Near(got, 0.5) {
		t.Errorf("r_cot over valid items = %v, want 0.5", got)
	}
	if got := RLCERCoT(items, verdicts, []bool{false, false, false}); got != 0 {
		t.Errorf("r_cot with no valid item = %v, want 0", got)
	}
	if RLCEROutcome(true) != 1 || RLCEROutcome(false) != -1 {
		t.Error("r_outcome is not ±1")
	}
}

func TestPAPOProcessAdvantages(t *testing.T) {
	eps := DefaultParams().Epsilon
	proc := []float64{0.8, 0.4, 0.9, 0}
	got := PAPOProcessAdvantages(proc, []bool{true, true, false, false}, eps) // μ_C 0.6, σ_C 0.2
	want := []float64{0.2 / (0.2 + eps), -0.2 / (0.2 + eps), 0, 0}
	for i := range want {
		if !rewardtest.Near(got[i], want[i]) {
			t.Errorf("A_proc,%d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, inC := range [][]bool{{true, false, false, false}, {false, false, false, false}} {
		for i, a := range PAPOProcessAdvantages(proc, inC, eps) {
			if a != 0 {
				t.Errorf("|C| < 2: A_proc,%d = %v, want 0", i, a)
			}
		}
	}
}

func TestParamsCheck(t *testing.T) {
	if err := DefaultParams().Check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := DefaultParams()
	bad.RPit, bad.Lambda, bad.Epsilon = 1, math.NaN(), 0
	err := bad.Check()
	for _, name := range []string{"r_pit", "lambda", "epsilon"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Check does not name %s: %v", name, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
