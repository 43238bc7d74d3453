package reward

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// The formulas of the five papers, as pure functions. Rubric items and
// verdicts are aligned by index: verdicts[j] is the judge's verdict on
// items[j] (the order the judge is asked in). A verdict's Satisfied is the
// judge's raw answer: for a PITFALL it means the response fell into it.

// Params are the constants of the formulas.
type Params struct {
	RSug    float64 // R_SUG, the SUGGEST budget of seed 000 eq. 3
	RPit    float64 // R_PIT, the PITFALL budget (negative; its magnitude is used)
	RBon    float64 // R_BON, the BONUS budget
	Lambda  float64 // λ, the weight of the format reward in r_base (seed 000 eq. 6)
	Alpha   float64 // α, the RLCER validity threshold on corr(v_k, z) (seed 002)
	Epsilon float64 // ε of every group normalization
	// PenaltyCorr is how RLCER's validity reads corr(v_k, z) for a penalty
	// (a PITFALL, a proposed criterion with negative points):
	// PenaltySignAware ("" is it) or PenaltyLiteral.
	PenaltyCorr string
}

// DefaultParams are the papers' defaults: R_SUG = 0.8, R_PIT = -1.0,
// R_BON = 1.0, λ = 0.1 (seed 000), α = 0.2 (seed 002), ε = 1e-6.
func DefaultParams() Params {
	return Params{RSug: 0.8, RPit: -1.0, RBon: 1.0, Lambda: 0.1, Alpha: 0.2, Epsilon: 1e-6}
}

// MaxBudget bounds the magnitude of R_SUG, R_PIT and R_BON: the papers use
// about 1, and the bound keeps every SRaR reward and range finite.
const MaxBudget = 1e6

// Check reports parameters the formulas cannot use.
func (p Params) Check() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
		ok   bool
	}{
		{"r_sug", p.RSug, p.RSug >= 0 && p.RSug <= MaxBudget},
		{"r_pit", p.RPit, p.RPit <= 0 && p.RPit >= -MaxBudget},
		{"r_bon", p.RBon, p.RBon >= 0 && p.RBon <= MaxBudget},
		{"lambda", p.Lambda, p.Lambda >= 0 && p.Lambda <= 1},
		{"alpha", p.Alpha, p.Alpha >= -1 && p.Alpha <= 1},
		{"epsilon", p.Epsilon, p.Epsilon > 0},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || !f.ok {
			errs = append(errs, fmt.Errorf("%s = %v is out of range", f.name, f.v))
		}
	}
	if p.PenaltyCorr != "" && !slices.Contains(PenaltyCorrs, p.PenaltyCorr) {
		errs = append(errs, fmt.Errorf("penalty-corr %q is not one of %s", p.PenaltyCorr, strings.Join(PenaltyCorrs, ", ")))
	}
	return errors.Join(errs...)
}

// TypeCounts are seed 000's N_τ: the items of each budgeted type in a
// rubric. PROCESS items count as SUGGEST (a reasoning step the solution
// should take); FACTUAL items, like ANSWER items, check a result and carry
// no delta. (The paper's rubrics have no PROCESS or FACTUAL items; this is
// our choice for scoring a factual_process rubric under srar.)
type TypeCounts struct{ Suggest, Pitfall, Bonus int }

// CountTypes counts N_SUG, N_PIT and N_BON.
func CountTypes(items []schema.Item) TypeCounts {
	var n TypeCounts
	for _, it := range items {
		switch it.Type {
		case schema.TypeSuggest, schema.TypeProcess:
			n.Suggest++
		case schema.TypePitfall:
			n.Pitfall++
		case schema.TypeBonus:
			n.Bonus++
		}
	}
	return n
}

// SRaRDelta is δ_j of seed 000 eq. 3: +R_SUG/N_SUG for a satisfied
// SUGGEST, -|R_PIT|/N_PIT for a satisfied PITFALL, +R_BON/N_BON for a
// satisfied BONUS, 0 otherwise (unsatisfied items, ANSWER and FACTUAL).
func SRaRDelta(p Params, n TypeCounts, itemType string, satisfied bool) float64 {
	if !satisfied {
		return 0
	}
	switch itemType {
	case schema.TypeSuggest, schema.TypeProcess:
		return share(p.RSug, n.Suggest)
	case schema.TypePitfall:
		return -share(math.Abs(p.RPit), n.Pitfall)
	case schema.TypeBonus:
		return share(p.RBon, n.Bonus)
	}
	return 0
}

func share(budget float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return budget / float64(n)
}

// StepDelta is one step's rubric reward d_{k,i} (seed 000, under eq. 3), or
// after NormalizeSteps its normalized value d̄_{k,i} (eq. 4).
type StepDelta struct {
	Step int32
	D    float64
}

// SRaRRubric is the rubric part of SRaR for one rollout i.
type SRaRRubric struct {
	// Suggest, Pitfall and Bonus split the rollout's total rubric reward
	// Δ_i = Σ_j δ_j by type; every item counts, whatever its step.
	Suggest, Pitfall, Bonus float64
	// Steps holds d_{k,i} = Σ_{j: k_j = k} δ_j for each step k in 1..K that
	// has at least one item attributed to it (satisfied or not), by step.
	// Items the judge tied to step 0 (the whole solution), -1 (none) or a
	// step the response does not have are in no step: eq. 2 admits only
	// k_j in 1..K, so they enter Δ_i but no step group G_k.
	Steps []StepDelta
	// Unplaced is the sum of the PITFALL deltas of items at no step of the
	// response (0, -1, beyond K): a group charges it to the rollout's
	// steps (normalizeGroupSteps), so that a flaw the judge could not place
	// costs in the step advantages too.
	Unplaced float64
}

// Total is Δ_i.
func (s SRaRRubric) Total() float64 { return s.Suggest + s.Pitfall + s.Bonus }

// SRaRDeltas applies eq. 3 to every verdict of one rollout with nSteps steps
// and sums the deltas per step.
func SRaRDeltas(p Params, items []schema.Item, verdicts []schema.Satisfaction, nSteps int) SRaRRubric {
	n := CountTypes(items)
	var out SRaRRubric
	for j := range min(len(items), len(verdicts)) {
		v := verdicts[j]
		d := SRaRDelta(p, n, items[j].Type, v.Satisfied)
		switch {
		case d > 0 && items[j].Type == schema.TypeBonus:
			out.Bonus += d
		case d > 0:
			out.Suggest += d
		case d < 0:
			out.Pitfall += d
		}
		if v.Step < 1 || int(v.Step) > nSteps {
			out.Unplaced += min(0, d)
			continue
		}
		k := slices.IndexFunc(out.Steps, func(s StepDelta) bool { return s.Step == v.Step })
		if k < 0 {
			if out.Steps == nil {
				out.Steps = make([]StepDelta, 0, min(nSteps, len(verdicts)))
			}
			out.Steps = append(out.Steps, StepDelta{Step: v.Step})
			k = len(out.Steps) - 1
		}
		out.Steps[k].D += d
	}
	slices.SortFunc(out.Steps, func(a, b StepDelta) int { return int(a.Step - b.Step) })
	return out
}

// BaseReward is r_base = (1 - λ) r_acc + λ r_fmt (seed 000 eq. 6), with
// r_acc = 1 for a correct final answer and r_fmt = 1 for a well-formatted
// response (FormatOK).
func BaseReward(p Params, correct, formatOK bool) float64 {
	return (1-p.Lambda)*b2f(correct) + p.Lambda*b2f(formatOK)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// GroupAdvantages is GRPO's group normalization A_i = (r_i - μ) / (σ + ε),
// with μ and σ the mean and population standard deviation of r over the
// group (seed 000 eq. 1; the outcome term of eq. 6; seed 004 eq. 3). Every
// advantage is 0 when the group has fewer than two rollouts or r is
// constant.
func GroupAdvantages(r []float64, eps float64) []float64 {
	out := make([]float64, len(r))
	if len(r) < 2 {
		return out
	}
	mu, sigma := meanStd(r)
	for i, v := range r {
		out[i] = (v - mu) / (sigma + eps)
	}
	return out
}

func meanStd(x []float64) (mu, sigma float64) {
	for _, v := range x {
		mu += v
	}
	mu /= float64(len(x))
	for _, v := range x {
		sigma += (v - mu) * (v - mu)
	}
	return mu, math.Sqrt(sigma / float64(len(x)))
}

// NormalizeSteps is seed 000 eq. 4: for each step k, d̄_{k,i} =
// (d_{k,i} - μ_k) / (σ_k + ε), with μ_k and σ_k the mean and population
// standard deviation over G_k, the rollouts whose d[i] has step k; d̄ is 0
// for every rollout when |G_k| <= 1. d[i] is rollout i's SRaRRubric.Steps;
// the result has the same shape.
func NormalizeSteps(d [][]StepDelta, eps float64) [][]StepDelta {
	maxStep, total := int32(0), 0
	for _, steps := range d {
		total += len(steps)
		for _, s := range steps {
			maxStep = max(maxStep, s.Step)
		}
	}
	sum := make([]float64, maxStep+1)
	count := make([]int, maxStep+1)
	for _, steps := range d {
		for _, s := range steps {
			sum[s.Step] += s.D
			count[s.Step]++
		}
	}
	sq := make([]float64, maxStep+1)
	for _, steps := range d {
		for _, s := range steps {
			dev := s.D - sum[s.Step]/float64(count[s.Step])
			sq[s.Step] += dev * dev
		}
	}
	all := make([]StepDelta, total) // one allocation for every rollout's
	out := make([][]StepDelta, len(d))
	for i, steps := range d {
		out[i], all = all[:len(steps):len(steps)], all[len(steps):]
		for j, s := range steps {
			out[i][j].Step = s.Step
			if n := count[s.Step]; n > 1 {
				mu, sigma := sum[s.Step]/float64(n), math.Sqrt(sq[s.Step]/float64(n))
				out[i][j].D = (s.D - mu) / (sigma + eps)
			}
		}
	}
	return out
}

// StepAdvantage is the SRaR advantage of the tokens of one step.
type StepAdvantage struct {
	Step      int32   `json:"step"`
	Offset    float64 `json:"offset"`    // d̄_{k,i}, the normalized rubric offset r̃ of eq. 5
	Advantage float64 `json:"advantage"` // Â_i(t) = outcome advantage + offset (eq. 6)
}

// SRaRStepAdvantages is seed 000's decoupled advantage (eq. 5-6) on each
// step span of one rollout: the outcome advantage A_base,i (GroupAdvantages
// of r_base) plus the step's normalized offset d̄_{k,i}, 0 for a step with no
// item attributed. Tokens before the first step get the outcome advantage
// alone.
func SRaRStepAdvantages(outcome float64, spans []StepSpan, dbar []StepDelta) []StepAdvantage {
	return stepAdvantages(make([]StepAdvantage, len(spans)), outcome, spans, dbar)
}

// stepAdvantages is SRaRStepAdvantages written into out, one per span.
func stepAdvantages(out []StepAdvantage, outcome float64, spans []StepSpan, dbar []StepDelta) []StepAdvantage {
	for i, sp := range spans {
		off := 0.0
		if k := slices.IndexFunc(dbar, func(s StepDelta) bool { return s.Step == sp.Step }); k >= 0 {
			off = dbar[k].D
		}
		out[i] = StepAdvantage{Step: sp.Step, Offset: off, Advantage: outcome + off}
	}
	return out
}

// criterionMet is s_k: the criterion holds. A positive item holds when
// satisfied; a PITFALL (polarity -1) holds when avoided.
func criterionMet(it schema.Item, v schema.Satisfaction) bool {
	return v.Satisfied == (Polarity(it) > 0)
}

// Polarity is the item's sign: +1 when satisfying it is good, -1 when
// satisfying it is bad; its type's when the item leaves it unset.
func Polarity(it schema.Item) int32 {
	if it.Polarity == 0 {
		return schema.PolarityOf(it.Type)
	}
	return it.Polarity
}

// WeightedFraction is R = Σ_k w_k s_k / Σ_k w_k (seed 003 eq. 4; for binary
// scores also seed 001 eq. 2, the awarded weight over the total weight),
// with s_k = criterionMet and w_k = |weight|. It is 0 when the weights sum
// to 0.
func WeightedFraction(items []schema.Item, verdicts []schema.Satisfaction) float64 {
	got, total := awardedWeight(items, verdicts)
	if total == 0 {
		return 0
	}
	return got / total
}

// awardedWeight is Σ_k w_k s_k and Σ_k w_k with w_k = |weight|.
func awardedWeight(items []schema.Item, verdicts []schema.Satisfaction) (got, total float64) {
	for j := range min(len(items), len(verdicts)) {
		w := math.Abs(items[j].Weight)
		total += w
		if criterionMet(items[j], verdicts[j]) {
			got += w
		}
	}
	return got, total
}

// RGRReward is seed 003 eq. 5: 1 when every FACTUAL item holds, else the
// weighted fraction R of eq. 4. A rubric without FACTUAL items always gets
// R (the rule needs at least one Factual criterion to be met; vacuous truth
// would give every response 1). factualAll reports the shortcut.
func RGRReward(items []schema.Item, verdicts []schema.Satisfaction) (r float64, factualAll bool) {
	factual, met := 0, 0
	for j := range min(len(items), len(verdicts)) {
		if items[j].Type == schema.TypeFactual {
			factual++
			if criterionMet(items[j], verdicts[j]) {
				met++
			}
		}
	}
	if factual > 0 && met == factual {
		return 1, true
	}
	return WeightedFraction(items, verdicts), false
}

// GroundedReward is seed 001's normalized reward r = (Σ_j a_j) / W, the
// awarded weight over the total weight (eq. 2), clipped to [0, 1] as the
// paper's implementation does, for a math rubric judged item by item: with
// binary verdicts a_j = |w_j| s_j. The caller gives 0 on a judge failure
// (the paper's conservative zero). A grounded question's per-criterion
// scores go through NormalizedReward, the same formula.
func GroundedReward(items []schema.Item, verdicts []schema.Satisfaction) float64 {
	return NormalizedReward(awardedWeight(items, verdicts))
}

// NormalizedReward is eq. 2 of seed 001 for scores a_j from 0 to w_j:
// clip(awarded / total, 0, 1), 0 when total is not positive.
func NormalizedReward(awarded, total float64) float64 {
	if !(total > 0) {
		return 0
	}
	return clip01(awarded / total)
}

func clip01(x float64) float64 { return min(1, max(0, x)) }

// LOOAdvantages is seed 001's group-relative credit (eq. 4-6): the
// leave-one-out baseline b_i = (1/(G-1)) Σ_{j≠i} r_j and the group standard
// deviation σ give A_i = (r_i - b_i) / (σ + ε). The paper's σ is "the group
// standard deviation"; we take the population standard deviation of all G
// rewards. Every advantage is 0 when G < 2.
func LOOAdvantages(r []float64, eps float64) []float64 {
	out := make([]float64, len(r))
	g := len(r)
	if g < 2 {
		return out
	}
	var sum float64
	for _, v := range r {
		sum += v
	}
	_, sigma := meanStd(r)
	for i, v := range r {
		b := (sum - v) / float64(g-1)
		out[i] = (v - b) / (sigma + eps)
	}
	return out
}

// Validity is one item's empirical validity over a group of rollouts
// (seed 002).
type Validity struct {
	SatRate *float64 // mean of v_k; nil for an empty group
	Corr    *float64 // sign-aware corr(v_k, z); nil when v_k or z is constant
	Valid   *bool    // std(v_k) > 0 and corr > α; nil when z is constant (not measurable)
}

// ItemValidity is RLCER's validity rule (seed 002, under eq. 6): over the N
// rollouts of one question, v_k[i] = 1 when rollout i satisfies the item and
// z[i] = 1 when it is correct; the item is valid when std(v_k) > 0 and
// corr(v_k, z) > α. The correlation is sign-aware, our choice for rubrics
// with polarity: for a PITFALL (polarity -1) satisfying it counts against,
// so a pitfall that wrong answers fall into is a valid one. It is the rule
// the pipeline's empirical stage stores in the corpus.
func ItemValidity(sat, correct []float64, polarity int32, alpha float64) Validity {
	var v Validity
	if len(sat) == 0 {
		return v
	}
	rate, sdS := meanStd(sat)
	v.SatRate = &rate
	_, sdC := meanStd(correct)
	if sdC == 0 {
		return v
	}
	valid := false
	if sdS > 0 {
		corr := max(-1, min(1, covariance(sat, correct)/(sdS*sdC)))
		if polarity < 0 {
			corr = -corr
		}
		v.Corr = &corr
		valid = corr > alpha
	}
	v.Valid = &valid
	return v
}

func covariance(x, y []float64) float64 {
	mx, _ := meanStd(x)
	my, _ := meanStd(y)
	s := 0.0
	for i := range x {
		s += (x[i] - mx) * (y[i] - my)
	}
	return s / float64(len(x))
}

// SignedPoints is RLCER's ŝ_k: the item's |weight| with its polarity's sign
// (negative for a PITFALL, whose satisfaction costs points).
func SignedPoints(it schema.Item) float64 {
	return float64(Polarity(it)) * math.Abs(it.Weight)
}

// RLCERCoT is seed 002 eq. 6: r_cot = norm(Σ_{k valid} π_φ(c_k) ŝ_k), with
// π_φ the judge's raw satisfaction and norm the min-max normalization over
// the scores attainable with the valid items, MinValue = Σ min(0, ŝ_k) and
// MaxValue = Σ max(0, ŝ_k). It is 0 when no valid item can move the score
// (MaxValue = MinValue).
func RLCERCoT(items []schema.Item, verdicts []schema.Satisfaction, valid []bool) float64 {
	var sum, lo, hi float64
	for j := range min(len(items), len(verdicts), len(valid)) {
		if !valid[j] {
			continue
		}
		s := SignedPoints(items[j])
		lo += min(0, s)
		hi += max(0, s)
		if verdicts[j].Satisfied {
			sum += s
		}
	}
	if hi == lo {
		return 0
	}
	return (sum - lo) / (hi - lo)
}

// RLCEROutcome is seed 002 eq. 8: +1 for a correct answer, -1 otherwise.
// The reasoner's reward is r = r_outcome + r_cot (eq. 9).
func RLCEROutcome(correct bool) float64 {
	if correct {
		return 1
	}
	return -1
}

// PAPOProcessAdvantages is seed 004 eq. 4: the process reward normalized
// only among the correct rollouts C, A_proc,i = (r_proc,i - μ_C) / (σ_C + ε)
// for i in C and 0 for the others; every advantage is 0 when |C| < 2, so
// PAPO reduces to GRPO. inC marks the members of C. The total advantage is
// A_out,i + A_proc,i (eq. 5), A_out being GroupAdvantages of the outcome
// reward (eq. 3).
func PAPOProcessAdvantages(proc []float64, inC []bool, eps float64) []float64 {
	out := make([]float64, len(proc))
	var members []float64
	for i, ok := range inC {
		if ok {
			members = append(members, proc[i])
		}
	}
	if len(members) < 2 {
		return out
	}
	mu, sigma := meanStd(members)
	for i, ok := range inC {
		if ok {
			out[i] = (proc[i] - mu) / (sigma + eps)
		}
	}
	return out
}
