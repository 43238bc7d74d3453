package reward

import (
	"maps"
	"slices"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/schema"
)

// judged is a rollout of text with verdicts, or with a judge failure when
// verdicts is nil.
func judged(text string, verdicts []schema.Satisfaction) Rollout {
	r := Analyze(text, "5")
	r.Verdicts = verdicts
	if verdicts == nil {
		r.JudgeErr = "the judge failed"
	}
	return r
}

func TestScoreSchemes(t *testing.T) {
	p := DefaultParams()
	lab := rewardtest.Label(rewardtest.SRaRItems())
	verdicts := []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, false, 2), rewardtest.Sat(3, true, 2), rewardtest.Sat(4, true, 1), rewardtest.Sat(5, true, 0)}
	ok := judged(rewardtest.TwoSteps, verdicts)
	failed := judged(rewardtest.TwoSteps, nil)
	// SRaR: r_base = 0.9 + 0.1; Δ = 0.4 (one of two SUGGESTs) - 1 (PITFALL) + 1
	// (BONUS) = 0.4; range [-1, 1 + 0.8 + 1]. Criteria met: 1, 4, 5 of 5
	// (the PITFALL was fallen into), so R = 0.6. RLCER: ŝ = +1 +1 -1 +1 +1,
	// MinValue -1, MaxValue 4, Σ = 1 - 1 + 1 + 1 = 2, r_cot = 3/5.
	for _, tc := range []struct {
		scheme     string
		r          Rollout
		reward     float64
		score      float64
		components map[string]float64
		metric     string
		metricVal  float64
	}{
		{schema.SchemeSRaR, ok, 1.4, 2.4 / 3.8, map[string]float64{"accuracy": 0.9, "format": 0.1, "suggest": 0.4, "pitfall": -1, "bonus": 1}, "rubric_delta", 0.4},
		{schema.SchemeRGR, ok, 0.6, 0.6, map[string]float64{"rubric": 0.6}, "factual_all", 0},
		{schema.SchemeGrounded, ok, 0.6, 0.6, map[string]float64{"rubric": 0.6}, "pass_rate", 0.6},
		{schema.SchemeRLCER, ok, 1.6, 2.6 / 3, map[string]float64{"outcome": 1, "cot": 0.6}, "n_valid", 5},
		{schema.SchemePAPO, ok, 1, 1, map[string]float64{"accuracy": 1}, "process", 0.6},
		// Judge failed: the floor, the lowest any judgment could pay (srar:
		// r_base with the PITFALL fallen into; rgr and grounded: zero).
		{schema.SchemeSRaR, failed, 0, 1 / 3.8, map[string]float64{"accuracy": 0.9, "format": 0.1, "suggest": 0, "pitfall": -1, "bonus": 0}, "rubric_delta", -1},
		{schema.SchemeRGR, failed, 0, 0, map[string]float64{"rubric": 0}, "pass_rate", 0},
		{schema.SchemeGrounded, failed, 0, 0, map[string]float64{"rubric": 0}, "pass_rate", 0},
		{schema.SchemeRLCER, failed, 1, 2.0 / 3, map[string]float64{"outcome": 1, "cot": 0}, "n_valid", 5},
		{schema.SchemePAPO, failed, 1, 1, map[string]float64{"accuracy": 1}, "process", 0},
	} {
		res := Score(p, tc.scheme, lab, &tc.r, nil)
		name := tc.scheme + map[bool]string{true: "", false: " (judge failed)"}[tc.r.JudgeOK()]
		if !rewardtest.Near(res.Reward, tc.reward) || !rewardtest.Near(res.Score, tc.score) {
			t.Errorf("%s: reward %v score %v, want %v %v", name, res.Reward, res.Score, tc.reward, tc.score)
		}
		if res.JudgeOK != tc.r.JudgeOK() || !res.Correct || res.Error != "" {
			t.Errorf("%s: judge_ok %v correct %v error %q", name, res.JudgeOK, res.Correct, res.Error)
		}
		if !maps.EqualFunc(res.Components, tc.components, rewardtest.Near) {
			t.Errorf("%s: components %v, want %v", name, res.Components, tc.components)
		}
		if got := res.Metrics[tc.metric]; !rewardtest.Near(got, tc.metricVal) {
			t.Errorf("%s: metrics[%s] = %v, want %v", name, tc.metric, got, tc.metricVal)
		}
	}
	res := Score(p, schema.SchemeSRaR, lab, &ok, nil)
	if len(res.Steps) != 2 || !rewardtest.Near(res.Steps[0].Delta, 1.4) || !rewardtest.Near(res.Steps[1].Delta, -1) {
		t.Errorf("step deltas %+v, want d_1 = 0.4 + 1, d_2 = -1", res.Steps)
	}
	if len(res.Items) != 5 || res.Items[2] != (ItemVerdict{ID: 3, Type: schema.TypePitfall, Satisfied: true, Step: 2}) {
		t.Errorf("items %+v", res.Items)
	}
}

// TestScoreInvariants checks what every result promises: components add up
// to the reward, the score is in [0, 1], and the component and metric keys
// are the same for every result of a scheme.
func TestScoreInvariants(t *testing.T) {
	p := DefaultParams()
	lab := rewardtest.Label(append(rewardtest.SRaRItems(), rewardtest.Item(6, schema.TypeFactual, 2), rewardtest.Item(7, schema.TypeProcess, 3)))
	texts := []string{rewardtest.TwoSteps, "No steps, no answer.", "### Step 1: guess\n<answer>7</answer>", "### Step 1: x\n### Step 2: y\n### Step 3: z\n\\boxed{5}"}
	for _, scheme := range schema.Schemes {
		var compKeys, metricKeys []string
		for i, text := range texts {
			for mask := range 1 << len(lab.Rubric) {
				verdicts := make([]schema.Satisfaction, len(lab.Rubric))
				for j := range verdicts {
					verdicts[j] = rewardtest.Sat(lab.Rubric[j].ID, mask&(1<<j) != 0, int32(j%4)-1)
				}
				if mask == 0 && i%2 == 1 {
					verdicts = nil // judge failed
				}
				r := judged(text, verdicts)
				res := Score(p, scheme, lab, &r, nil)
				sum := 0.0
				for _, v := range res.Components {
					sum += v
				}
				if !rewardtest.Near(sum, res.Reward) {
					t.Fatalf("%s text %d mask %b: components %v add to %v, reward %v", scheme, i, mask, res.Components, sum, res.Reward)
				}
				if res.Score < 0 || res.Score > 1 {
					t.Fatalf("%s text %d mask %b: score %v", scheme, i, mask, res.Score)
				}
				ck, mk := slices.Sorted(maps.Keys(res.Components)), slices.Sorted(maps.Keys(res.Metrics))
				if compKeys == nil {
					compKeys, metricKeys = ck, mk
				}
				if !slices.Equal(ck, compKeys) || !slices.Equal(mk, metricKeys) {
					t.Fatalf("%s: keys changed: %v %v, first %v %v", scheme, ck, mk, compKeys, metricKeys)
				}
			}
		}
	}
}

// TestSRaRWithoutRubricSignalIsGRPO checks seed 000 Proposition 20.5: with no
// rubric signal every step's advantage is the GRPO advantage of r_base.
func TestSRaRWithoutRubricSignalIsGRPO(t *testing.T) {
	p := DefaultParams()
	lab := rewardtest.Label(rewardtest.SRaRItems())
	texts := []string{rewardtest.TwoSteps, "### Step 1: guess\n<answer>7</answer>", rewardtest.TwoSteps + "\n### Step 3: more", "no format 5"}
	for _, name := range []string{"nothing satisfied", "no step attributed", "judge failed"} {
		var rs []Rollout
		for _, text := range texts {
			var v []schema.Satisfaction
			switch name {
			case "nothing satisfied":
				for _, it := range lab.Rubric {
					v = append(v, rewardtest.Sat(it.ID, false, 1))
				}
			case "no step attributed":
				for _, it := range lab.Rubric {
					v = append(v, rewardtest.Sat(it.ID, it.Type != schema.TypePitfall, -1))
				}
			}
			rs = append(rs, judged(text, v))
		}
		g := ScoreGroup(p, schema.SchemeSRaR, lab, rs)
		base := make([]float64, len(rs))
		for i := range rs {
			base[i] = BaseReward(p, rs[i].Correct, rs[i].FormatOK)
		}
		grpo := GroupAdvantages(base, p.Epsilon)
		for i, a := range g.Advantages {
			if !rewardtest.Near(a.Outcome, grpo[i]) || len(a.Steps) != len(rs[i].Steps) {
				t.Fatalf("%s: rollout %d: %+v, GRPO %v", name, i, a, grpo[i])
			}
			for _, s := range a.Steps {
				if s.Offset != 0 || !rewardtest.Near(s.Advantage, grpo[i]) {
					t.Errorf("%s: rollout %d step %d: %+v, want the GRPO advantage %v", name, i, s.Step, s, grpo[i])
				}
			}
		}
	}
}

func TestScoreGroupSRaR(t *testing.T) {
	p := DefaultParams()
	lab := rewardtest.Label(rewardtest.SRaRItems())
	rs := []Rollout{
		judged(rewardtest.TwoSteps, []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, true, 2), rewardtest.Sat(3, false, 2), rewardtest.Sat(4, false, -1), rewardtest.Sat(5, true, 2)}),
		judged(rewardtest.TwoSteps, []schema.Satisfaction{rewardtest.Sat(1, true, 1), rewardtest.Sat(2, false, 2), rewardtest.Sat(3, true, 2), rewardtest.Sat(4, false, -1), rewardtest.Sat(5, true, 2)}),
		judged("### Step 1: guess\n<answer>7</answer>", []schema.Satisfaction{rewardtest.Sat(1, false, 1), rewardtest.Sat(2, false, -1), rewardtest.Sat(3, true, 1), rewardtest.Sat(4, false, -1), rewardtest.Sat(5, false, 1)}),
	}
	g := ScoreGroup(p, schema.SchemeSRaR, lab, rs)
	eps := p.Epsilon
	// r_base = 1, 1, 0.1 (the third is wrong but formatted).
	outcome := GroupAdvantages([]float64{1, 1, 0.1}, eps)
	// d_1 = 0.4, 0.4, -1 (all three in G_1); d_2 = 0.4, -1 (the third has no step 2).
	d1 := GroupAdvantages([]float64{0.4, 0.4, -1}, eps)
	d2 := GroupAdvantages([]float64{0.4, -1}, eps)
	want := [][]float64{{outcome[0] + d1[0], outcome[0] + d2[0]}, {outcome[1] + d1[1], outcome[1] + d2[1]}, {outcome[2] + d1[2]}}
	for i := range want {
		a := g.Advantages[i]
		if !rewardtest.Near(a.Outcome, outcome[i]) || a.Process != 0 || len(a.Steps) != len(want[i]) {
			t.Fatalf("rollout %d: %+v", i, a)
		}
		for k, w := range want[i] {
			if !rewardtest.Near(a.Steps[k].Advantage, w) {
				t.Errorf("rollout %d step %d: advantage %v, want %v", i, k+1, a.Steps[k].Advantage, w)
			}
		}
	}
	// The PITFALL is fallen into by the wrong rollout and one right one:
	// satisfaction (0, 1, 1) against correctness (1, 1, 0).
	v := g.Validity[2]
	if v.ID != 3 || v.SatRate == nil || !rewardtest.Near(*v.SatRate, 2.0/3) || v.Corr == nil || !rewardtest.Near(*v.Corr, 0.5) || v.Valid == nil || !*v.Valid {
		t.Errorf("pitfall validity %+v (corr %v)", v, deref(v.Corr))
	}
}

func TestScoreGroupPAPO(t *testing.T) {
	p := DefaultParams()
	items := []schema.Item{rewardtest.Item(1, schema.TypeSuggest, 1), rewardtest.Item(2, schema.TypeSuggest, 3)}
	lab := rewardtest.Label(items)
	wrong := "### Step 1: guess\n<answer>7</answer>"
	all := func(a, b bool) []schema.Satisfaction {
		return []schema.Satisfaction{rewardtest.Sat(1, a, 1), rewardtest.Sat(2, b, 1)}
	}
	for _, tc := range []struct {
		name    string
		rs      []Rollout
		process []float64
	}{
		{"three correct", []Rollout{judged(rewardtest.TwoSteps, all(true, true)), judged(rewardtest.TwoSteps, all(true, false)), judged(rewardtest.TwoSteps, all(false, true)), judged(wrong, all(true, true))},
			// r_proc = 1, 0.25, 0.75 over C: μ 2/3, σ sqrt(((1/3)² + (5/12)² + (1/12)²)/3)
			nil},
		{"one correct", []Rollout{judged(rewardtest.TwoSteps, all(true, true)), judged(wrong, all(true, true)), judged(wrong, all(false, false))}, []float64{0, 0, 0}},
		// The unjudged correct rollout is left out of C (the judged one
		// alone gets 0), but gets the process advantage of r_proc 0 beside
		// it, the lowest a judgment of it could give: (0 - 0.5) / 0.5.
		{"two correct, one unjudged", []Rollout{judged(rewardtest.TwoSteps, all(true, true)), judged(rewardtest.TwoSteps, nil), judged(wrong, all(true, true))}, []float64{0, -0.5 / (0.5 + 1e-6), 0}},
	} {
		g := ScoreGroup(p, schema.SchemePAPO, lab, tc.rs)
		acc := make([]float64, len(tc.rs))
		for i := range tc.rs {
			acc[i] = b2f(tc.rs[i].Correct)
		}
		grpo := GroupAdvantages(acc, p.Epsilon)
		want := tc.process
		if want == nil {
			want = append(GroupAdvantages([]float64{1, 0.25, 0.75}, p.Epsilon), 0)
		}
		for i, a := range g.Advantages {
			if !rewardtest.Near(a.Outcome, grpo[i]) || !rewardtest.Near(a.Process, want[i]) || !rewardtest.Near(a.Total, grpo[i]+want[i]) || len(a.Steps) != 0 {
				t.Errorf("%s: rollout %d: %+v, want outcome %v process %v", tc.name, i, a, grpo[i], want[i])
			}
		}
	}
}

func TestScoreGroupOtherSchemes(t *testing.T) {
	p := DefaultParams()
	items := []schema.Item{rewardtest.Item(1, schema.TypeFactual, 2), rewardtest.Item(2, schema.TypeProcess, 3)}
	lab := rewardtest.Label(items)
	lab.Style = schema.StyleFactualProcess
	wrong := "### Step 1: guess\n<answer>7</answer>"
	rs := []Rollout{
		judged(rewardtest.TwoSteps, []schema.Satisfaction{rewardtest.Sat(1, true, 2), rewardtest.Sat(2, false, 1)}),
		judged(rewardtest.TwoSteps, []schema.Satisfaction{rewardtest.Sat(1, false, 2), rewardtest.Sat(2, true, 1)}),
		judged(wrong, []schema.Satisfaction{rewardtest.Sat(1, false, 1), rewardtest.Sat(2, false, 1)}),
	}
	// rgr: 1 (factual holds), 0.6, 0. grounded: 0.4, 0.6, 0.
	for _, tc := range []struct {
		scheme  string
		rewards []float64
		adv     func([]float64, float64) []float64
	}{
		{schema.SchemeRGR, []float64{1, 0.6, 0}, GroupAdvantages},
		{schema.SchemeGrounded, []float64{0.4, 0.6, 0}, LOOAdvantages},
	} {
		g := ScoreGroup(p, tc.scheme, lab, rs)
		want := tc.adv(tc.rewards, p.Epsilon)
		for i := range rs {
			if !rewardtest.Near(g.Results[i].Reward, tc.rewards[i]) || !rewardtest.Near(g.Advantages[i].Outcome, want[i]) || g.Advantages[i].Process != 0 {
				t.Errorf("%s rollout %d: reward %v advantage %+v, want %v %v", tc.scheme, i, g.Results[i].Reward, g.Advantages[i], tc.rewards[i], want[i])
			}
		}
	}
	// rlcer: the FACTUAL item follows correctness (1, 0 | 0): corr 0.5, valid;
	// the PROCESS one (0, 1, 0) has corr 0.5 too. Both valid: ŝ = 2, 3.
	g := ScoreGroup(p, schema.SchemeRLCER, lab, rs)
	for j, v := range g.Validity {
		if v.Valid == nil || !*v.Valid || !rewardtest.Near(*v.Corr, 0.5) {
			t.Errorf("item %d validity %+v", j+1, v)
		}
	}
	rewards := []float64{1 + 0.4, 1 + 0.6, -1}
	want := GroupAdvantages(rewards, p.Epsilon)
	for i := range rs {
		if !rewardtest.Near(g.Results[i].Reward, rewards[i]) || !rewardtest.Near(g.Advantages[i].Outcome, want[i]) {
			t.Errorf("rlcer rollout %d: reward %v advantage %v, want %v %v", i, g.Results[i].Reward, g.Advantages[i].Outcome, rewards[i], want[i])
		}
	}
}

// TestErrorResultHasTheSchemesKeys: a result that could not be scored has
// the same component and metric keys as a scored one of its scheme (verl's
// dict-return rule: every sample of a batch returns the same keys), all 0.
func TestErrorResultHasTheSchemesKeys(t *testing.T) {
	lab := &schema.Label{ID: "p", Rubric: []schema.Item{{ID: 1, Type: schema.TypeSuggest, Text: "s"}, {ID: 2, Type: schema.TypeAnswer, Text: "a"}}}
	for _, scheme := range schema.Schemes {
		ok := Score(DefaultParams(), scheme, lab, &Rollout{}, nil)
		bad := ErrorResult("r", "p", scheme, "unknown problem")
		if !slices.Equal(slices.Sorted(maps.Keys(ok.Components)), slices.Sorted(maps.Keys(bad.Components))) ||
			!slices.Equal(slices.Sorted(maps.Keys(ok.Metrics)), slices.Sorted(maps.Keys(bad.Metrics))) {
			t.Errorf("%s: error result keys %v %v, scored %v %v", scheme, bad.Components, bad.Metrics, ok.Components, ok.Metrics)
		}
		for k, v := range bad.Metrics {
			if v != 0 {
				t.Errorf("%s: error result metric %s = %v", scheme, k, v)
			}
		}
	}
}
