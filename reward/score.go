package reward

import (
	"math"

	"github.com/rubricforge/rubricforge/schema"
)

// ItemVerdict is the judge's verdict on one rubric item, as results carry it.
type ItemVerdict struct {
	ID        int32  `json:"id"`
	Type      string `json:"type"`
	Satisfied bool   `json:"satisfied"`
	Step      int32  `json:"step"`
}

// StepResult is a step span with its SRaR rubric reward d_k (seed 000,
// under eq. 3), whatever the scheme. When the judge failed it is the lowest
// any judgment could give the step under the floor policy (-|R_PIT| when
// the rubric has PITFALLs, else 0), and 0 under the outcome policy.
type StepResult struct {
	StepSpan
	Delta float64 `json:"delta"`
}

// Result is the score of one response.
type Result struct {
	RequestID string  `json:"request_id,omitempty"`
	ProblemID string  `json:"problem_id"`
	Scheme    string  `json:"scheme"`
	Reward    float64 `json:"reward"` // the scalar a trainer uses
	Score     float64 `json:"score"`  // the same mapped to [0, 1]
	// JudgeOK is false when the satisfaction judge failed (JudgeError says
	// why); the reward then follows the scheme's fallback.
	JudgeOK    bool   `json:"judge_ok"`
	JudgeError string `json:"judge_error,omitempty"`
	// Empty is set when the response says nothing (Silent): it is
	// not judged and is paid the floor whatever the judge-failure policy,
	// so that no response earns more by saying nothing (judge_ok false,
	// judge_error says so; not a judge failure).
	Empty   bool `json:"empty,omitempty"`
	Correct bool `json:"correct"` // verify.Equal of the extracted answer against the ground truth
	// CutOff is set when the response's finish reason says it was cut off
	// ("finish_reason length"): no answer was taken from it, so it is not
	// correct. Absent when the finish reason was not sent.
	CutOff string `json:"cut_off,omitempty"`
	// Components add up to Reward; their keys are fixed per scheme.
	Components Values `json:"components"`
	// Metrics are diagnostics; their keys are fixed per scheme.
	Metrics Values        `json:"metrics"`
	Items   []ItemVerdict `json:"items"`
	Steps   []StepResult  `json:"steps"`
	// Criteria are a grounded question's per-criterion scores (seed 001);
	// absent for the math rubrics.
	Criteria []CriterionScore `json:"criteria,omitempty"`
	// Error is set when the response could not be scored at all (unknown
	// problem, ...); the reward is then 0. A response that could not be
	// judged for what it holds (/get_reward without prompts, a response
	// holding a chat header) has it too, with judge_ok false and the floor
	// reward.
	Error string `json:"error"`
	// Note says how the rubric was found when not as asked: a label that
	// could not be used, replaced by the corpus's rubric of its problem.
	Note string `json:"note,omitempty"`
	// RubricVersion is the version of the problem's live rubric the result
	// was scored with (rewardd --state-dir: 1 for the rubric as loaded, one
	// more at each retirement, reinstatement or admission); 0, and absent,
	// when the rubric does not move.
	RubricVersion int64 `json:"rubric_version,omitempty"`
	// OffPolicy marks a response its group's request marked off-policy
	// (RGR's refined response).
	OffPolicy bool `json:"off_policy,omitempty"`
}

// ErrorResult is the result of an item that could not be scored: reward 0,
// with the scheme's component and metric keys all 0, so every result of a
// scheme has the same keys.
func ErrorResult(requestID, problemID, scheme, msg string) Result {
	shape := result(Params{}, scheme, &schema.Label{}, &Rollout{}, scored{}, new(GroupMemory))
	return Result{RequestID: requestID, ProblemID: problemID, Scheme: scheme, Error: msg,
		Components: zeroed(shape.Components), Metrics: zeroed(shape.Metrics), Items: []ItemVerdict{}, Steps: []StepResult{}}
}

// zeroed is m with every value 0 (an empty, non-nil map for nil).
func zeroed(m Values) Values {
	out := make(Values, len(m))
	for k := range m {
		out[k] = 0
	}
	return out
}

// scored holds one rollout's intermediate values under every scheme; the
// results and the group advantages are built from it.
type scored struct {
	base    float64    // r_base (srar)
	rubric  SRaRRubric // Δ_i by type and d_{k,i} (srar), zero without verdicts
	rgr     float64    // eq. 5 of seed 003, or the fallback
	rgrAll  bool
	ground  float64 // seed 001's clipped normalized score, 0 without verdicts
	pass    float64 // weighted fraction of criteria met, 0 without verdicts
	cot     float64 // RLCER r_cot over the valid items
	nValid  int
	process float64 // PAPO r_proc: the grounded score of a correct, judged rollout
	// floored: the judgment failed and the floor policy pays it; its step
	// deltas and group advantages are then the lowest any judgment of the
	// rollout could give (failure_group.go).
	floored bool
}

func compute(p Params, policy string, lab *schema.Label, r *Rollout, valid []bool) scored {
	var s scored
	items := lab.Rubric
	s.base = BaseReward(p, r.Correct, r.FormatOK)
	for _, v := range valid {
		if v {
			s.nValid++
		}
	}
	if r.Empty {
		fallback(p, OnJudgeFailureFloor, items, r, &s)
		return s
	}
	if !r.JudgeOK() {
		fallback(p, policy, items, r, &s)
		return s
	}
	s.rubric = SRaRDeltas(p, items, r.Verdicts, len(r.Steps))
	s.rgr, s.rgrAll = RGRReward(items, r.Verdicts)
	s.pass = WeightedFraction(items, r.Verdicts)
	s.ground = clip01(s.pass)
	s.cot = RLCERCoT(items, r.Verdicts, valid)
	if r.Correct {
		s.process = s.ground
	}
	return s
}

// Score scores one rollout against lab under scheme. valid marks the items
// RLCER counts; nil takes the validity the corpus stored with each item
// (storedValidity: an item never measured counts as valid).
//
// Rewards and [0, 1] scores by scheme (judge failed: the floor, see
// OnJudgeFailureFloor):
//   - srar: r_base + Δ_i (components accuracy, format, suggest, pitfall,
//     bonus); score min-max over the range the rubric's types allow,
//     [-|R_PIT| if it has PITFALLs, 1 + R_SUG + R_BON for the types it has].
//     Floor: r_base - |R_PIT| when the rubric has PITFALLs, else r_base.
//   - rgr: seed 003 eq. 5 (component rubric). Floor: 0.
//   - grounded: seed 001's clipped normalized score (component rubric).
//     Floor: 0, the paper's rule.
//   - rlcer: r_outcome (±1) + r_cot (components outcome, cot); score
//     (reward + 1) / 3. Floor: r_outcome.
//   - papo: the outcome reward r_acc (component accuracy); the process
//     reward is metrics.process and enters only the group advantage
//     (/v1/score_group). Floor: the same, with process 0.
func Score(p Params, scheme string, lab *schema.Label, r *Rollout, valid []bool) Result {
	return ScoreWith(p, OnJudgeFailureFloor, scheme, lab, r, valid)
}

// storedValidity is the corpus's empirical validity of each item. An item
// never measured (no sat_rate: the empirical stage was off) counts as
// valid; one measured over rollouts whose correctness did not vary (a
// sat_rate, no validity) does not: its correlation was undefined.
func storedValidity(items []schema.Item) []bool {
	out := make([]bool, len(items))
	for j, it := range items {
		if it.EmpiricalValid != nil {
			out[j] = *it.EmpiricalValid
		} else {
			out[j] = it.SatRate == nil
		}
	}
	return out
}

// result is one rollout's result, carved from mem.
func result(p Params, scheme string, lab *schema.Label, r *Rollout, s scored, mem *GroupMemory) Result {
	res := Result{ProblemID: lab.ID, Scheme: scheme, JudgeOK: r.JudgeOK() && !r.Empty, JudgeError: r.JudgeErr, Correct: r.Correct, CutOff: r.CutOff, Empty: r.Empty}
	if r.Empty && res.JudgeError == "" {
		res.JudgeError = ErrEmptyResponse.Error()
	}
	acc := b2f(r.Correct)
	c := mem.values()
	switch scheme {
	case schema.SchemeSRaR:
		c["accuracy"], c["format"] = (1-p.Lambda)*acc, p.Lambda*b2f(r.FormatOK)
		c["suggest"], c["pitfall"], c["bonus"] = s.rubric.Suggest, s.rubric.Pitfall, s.rubric.Bonus
		res.Reward = s.base + s.rubric.Total()
		lo, hi := srarRange(p, CountTypes(lab.Rubric))
		res.Score = clip01((res.Reward - lo) / (hi - lo))
	case schema.SchemeRGR:
		res.Reward, res.Score = s.rgr, s.rgr
		c["rubric"] = s.rgr
	case schema.SchemeGrounded:
		res.Reward, res.Score = s.ground, s.ground
		c["rubric"] = s.ground
	case schema.SchemeRLCER:
		out := RLCEROutcome(r.Correct)
		res.Reward = out + s.cot
		res.Score = clip01((res.Reward + 1) / 3)
		c["outcome"], c["cot"] = out, s.cot
	case schema.SchemePAPO:
		res.Reward, res.Score = acc, acc
		c["accuracy"] = acc
	}
	res.Components = c
	res.Metrics = metrics(scheme, lab, r, s, mem.values())
	res.Items = itemVerdicts(lab.Rubric, r.Verdicts, mem)
	res.Steps = stepResults(r.Steps, s.rubric.Steps, mem)
	if s.floored {
		floorStepDeltas(res.Steps, lab.Rubric, p)
	}
	return res
}

// srarRange is the lowest and highest SRaR reward a rubric with n allows.
func srarRange(p Params, n TypeCounts) (lo, hi float64) {
	hi = 1
	if n.Pitfall > 0 {
		lo = -math.Abs(p.RPit)
	}
	if n.Suggest > 0 {
		hi += p.RSug
	}
	if n.Bonus > 0 {
		hi += p.RBon
	}
	return lo, hi
}

// metrics are the diagnostics of a result: n_items, satisfied (items the
// judge called satisfied), n_steps and pass_rate (the weighted fraction of
// criteria met) for every scheme, and per scheme base_reward and
// rubric_delta (srar), factual_all (rgr), n_valid (rlcer), process (papo),
// written into the empty map m.
func metrics(scheme string, lab *schema.Label, r *Rollout, s scored, m Values) Values {
	sat := 0
	for _, v := range r.Verdicts {
		if v.Satisfied {
			sat++
		}
	}
	m["n_items"], m["satisfied"] = float64(len(lab.Rubric)), float64(sat)
	m["n_steps"], m["pass_rate"] = float64(len(r.Steps)), s.pass
	switch scheme {
	case schema.SchemeSRaR:
		m["base_reward"], m["rubric_delta"] = s.base, s.rubric.Total()
	case schema.SchemeRGR:
		m["factual_all"] = b2f(s.rgrAll)
	case schema.SchemeRLCER:
		m["n_valid"] = float64(s.nValid)
	case schema.SchemePAPO:
		m["process"] = s.process
	}
	return m
}

func itemVerdicts(items []schema.Item, verdicts []schema.Satisfaction, mem *GroupMemory) []ItemVerdict {
	out := mem.items.Take(min(len(items), len(verdicts)))
	for j := range out {
		v := verdicts[j]
		out[j] = ItemVerdict{ID: items[j].ID, Type: items[j].Type, Satisfied: v.Satisfied, Step: v.Step}
	}
	return out
}

func stepResults(spans []StepSpan, d []StepDelta, mem *GroupMemory) []StepResult {
	out := mem.steps.Take(len(spans))
	for i, sp := range spans {
		out[i].StepSpan = sp
		for _, s := range d {
			if s.Step == sp.Step {
				out[i].Delta = s.D
			}
		}
	}
	return out
}

// Advantage is one rollout's advantage within its group.
type Advantage struct {
	// Outcome is the scheme's group advantage of its reward: GRPO's (eq. 1 of
	// seed 000) of r_base for srar, of the reward for rgr and rlcer, of the
	// outcome reward for papo; the leave-one-out one (seed 001) for grounded.
	Outcome float64 `json:"outcome"`
	// Process is PAPO's process advantage (seed 004 eq. 4); 0 for the other
	// schemes.
	Process float64 `json:"process"`
	Total   float64 `json:"total"` // Outcome + Process (seed 004 eq. 5)
	// Steps are SRaR's decoupled advantages per step span (seed 000 eq.
	// 5-6); empty for the other schemes.
	Steps []StepAdvantage `json:"steps"`
}

// ItemGroupValidity is one item's RLCER validity measured over a group.
type ItemGroupValidity struct {
	ID      int32    `json:"id"`
	SatRate *float64 `json:"sat_rate"`
	Corr    *float64 `json:"corr"`
	Valid   *bool    `json:"valid"` // null when correctness does not vary in the group: then no item is valid for it
}

// Group is the score of all rollouts of one prompt.
type Group struct {
	Results    []Result            `json:"results"`
	Advantages []Advantage         `json:"advantages"`
	Validity   []ItemGroupValidity `json:"validity"`
}

// ScoreGroup scores every rollout of one prompt under scheme and computes
// the group-level outputs. Validity is measured over the rollouts whose
// judge succeeded, and RLCER's rewards count only the items valid in the
// group: where correctness does not vary over those rollouts corr(v_k, z)
// is undefined, no item is valid and r_cot is 0 for every rollout (seed 002
// eq. 6-7), whatever the corpus stored. A rollout whose judge failed enters
// no step group G_k (srar), is not in PAPO's correct set C and does not
// count in the validity, so the others' advantages are the paper's over the
// judged rollouts; its own advantages, term by term and step by step, are
// the lowest any judgment of it could have given it in the group (see
// floorAdvantages), as its reward is the lowest any judgment could give.
func ScoreGroup(p Params, scheme string, lab *schema.Label, rs []Rollout) Group {
	return ScoreGroupIn(p, OnJudgeFailureFloor, scheme, lab, rs, new(GroupMemory))
}

// ScoreGroupIn is ScoreGroup with a judge-failure policy (one of
// JudgeFailurePolicies) and its results carved from mem: they share mem's
// memory until its next Reset. rewardd scores group after group this way in
// memory it reuses.
func ScoreGroupIn(p Params, policy, scheme string, lab *schema.Label, rs []Rollout, mem *GroupMemory) Group {
	validity := GroupValidity(p, lab.Rubric, rs)
	valid := make([]bool, len(validity))
	for j, v := range validity {
		valid[j] = v.Valid != nil && *v.Valid
	}
	steps := 0
	for i := range rs {
		steps += len(rs[i].Steps)
	}
	mem.items.Grow(len(rs) * len(lab.Rubric))
	mem.steps.Grow(steps)
	if scheme == schema.SchemeSRaR {
		mem.stepAdvantages.Grow(steps)
	}
	g := Group{Results: mem.results.Take(len(rs)), Validity: validity}
	ss := mem.scored.Take(len(rs))
	for i := range rs {
		ss[i] = compute(p, policy, lab, &rs[i], valid)
		g.Results[i] = result(p, scheme, lab, &rs[i], ss[i], mem)
	}
	g.Advantages = finiteAdvantages(p, scheme, lab, rs, ss, g.Results, mem)
	return g
}

// groupAdvantages are the rollouts' advantages, carved from mem.
func groupAdvantages(p Params, scheme string, lab *schema.Label, rs []Rollout, ss []scored, results []Result, mem *GroupMemory) []Advantage {
	n := len(rs)
	signal := make([]float64, n)
	for i := range n {
		switch scheme {
		case schema.SchemeSRaR:
			signal[i] = ss[i].base
		case schema.SchemePAPO:
			signal[i] = b2f(rs[i].Correct)
		default:
			signal[i] = results[i].Reward
		}
	}
	var outcome, process []float64
	if scheme == schema.SchemeGrounded {
		outcome = LOOAdvantages(signal, p.Epsilon)
	} else {
		outcome = GroupAdvantages(signal, p.Epsilon)
	}
	if scheme == schema.SchemePAPO {
		proc := make([]float64, n)
		inC := make([]bool, n)
		for i := range n {
			proc[i], inC[i] = ss[i].process, rs[i].Correct && rs[i].JudgeOK()
		}
		process = PAPOProcessAdvantages(proc, inC, p.Epsilon)
	} else {
		process = make([]float64, n)
	}
	var dbar [][]StepDelta
	if scheme == schema.SchemeSRaR {
		dbar = normalizeGroupSteps(groupSteps(rs, ss), p.Epsilon)
	}
	out := mem.advantages.Take(n)
	for i := range n {
		out[i] = Advantage{Outcome: outcome[i], Process: process[i], Total: outcome[i] + process[i], Steps: []StepAdvantage{}}
		if dbar != nil {
			out[i].Steps = stepAdvantages(mem.stepAdvantages.Take(len(rs[i].Steps)), outcome[i], rs[i].Steps, dbar[i])
		}
	}
	floorAdvantages(p, scheme, lab, rs, ss, out)
	capCutOffAdvantages(scheme, rs, out)
	return out
}

// GroupValidity measures RLCER validity (ItemValidity) of every item over
// the rollouts whose judge succeeded.
func GroupValidity(p Params, items []schema.Item, rs []Rollout) []ItemGroupValidity {
	var correct []float64
	var judged []int
	for i := range rs {
		if rs[i].JudgeOK() {
			judged = append(judged, i)
			correct = append(correct, b2f(rs[i].Correct))
		}
	}
	out := make([]ItemGroupValidity, len(items))
	sat := make([]float64, len(judged))
	for j, it := range items {
		for k, i := range judged {
			sat[k] = 0
			if j < len(rs[i].Verdicts) && rs[i].Verdicts[j].Satisfied {
				sat[k] = 1
			}
		}
		v := ItemValidity(sat, correct, p.validityPolarity(it), p.Alpha)
		out[j] = ItemGroupValidity{ID: it.ID, SatRate: v.SatRate, Corr: v.Corr, Valid: v.Valid}
	}
	return out
}
