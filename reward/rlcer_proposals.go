package reward

import (
	"fmt"
	"math"
	"strings"

	"github.com/rubricforge/rubricforge/schema"
)

// RLCER's rubricator (seed 002, section 4.4): the policy, prompted with a
// question and one of its responses, proposes rubrics; a proposed criterion
// is valid when, over the group's responses, its satisfaction varies
// (std(v_k) > 0) and correlates with correctness (corr(v_k, z) > α); the
// rubricator is paid r = K_valid/K + r_format (eq. 10-12), and the reasoner's
// r_cot may use the valid proposed criteria (eq. 6).

// How a penalty criterion's (a PITFALL's, negative points') validity reads
// corr(v_k, z), Params.PenaltyCorr.
const (
	// PenaltySignAware, the default, correlates correctness with the
	// criterion being met: for a penalty, with the flaw being absent
	// (corr(1 - v_k, z) = -corr(v_k, z)). A penalty that wrong answers fall
	// into is then valid, as a merit that right answers show is.
	PenaltySignAware = "sign-aware"
	// PenaltyLiteral is the paper's formula as written: corr(v_k, z) > α
	// for every criterion, v_k being the verifier's True ("the flaw is
	// present" for a penalty), so a penalty is valid only when the flaw
	// comes with right answers.
	PenaltyLiteral = "literal"
)

// PenaltyCorrs lists the settings of Params.PenaltyCorr.
var PenaltyCorrs = []string{PenaltySignAware, PenaltyLiteral}

// validityPolarity is the sign corr(v_k, z) is read with for item it.
func (p Params) validityPolarity(it schema.Item) int32 {
	if p.PenaltyCorr == PenaltyLiteral {
		return 1
	}
	return Polarity(it)
}

// Proposal is one rubricator output read for scoring.
type Proposal struct {
	// Output is the parsed output; its Rubrics are nil when the text did
	// not parse (Err says why).
	Output schema.RubricatorOutput
	Err    error
	// FormatProblems are the departures from the contract that cost the
	// format reward (schema.RubricatorOutput.FormatProblems); empty for a
	// correct format. A proposal that did not parse has none listed: Err
	// says why it earns nothing.
	FormatProblems []string
}

// FormatOK reports whether the proposal earns the format reward.
func (p *Proposal) FormatOK() bool { return p.Err == nil && len(p.FormatProblems) == 0 }

// ReadProposal parses a rubricator's output.
func ReadProposal(text string) Proposal {
	out, err := schema.ParseRubricator(text)
	if err != nil {
		return Proposal{Err: err}
	}
	return Proposal{Output: out, FormatProblems: out.FormatProblems()}
}

// ProposedRubric is the criteria of a group's proposals as rubric items:
// Items holds every proposal's criteria in order (proposal by proposal),
// with ids from a base up; Judged holds each distinct criterion once
// (schema.CriterionKey), as the judge is asked about it.
type ProposedRubric struct {
	Items []schema.Item
	// Owner is the proposal of each item of Items.
	Owner []int
	// Judged are the distinct criteria, in order of first appearance, with
	// ids from the same base; JudgedOf is the index in Judged of each item
	// of Items.
	Judged   []schema.Item
	JudgedOf []int
}

// ProposedItems turns the parsed proposals' criteria into rubric items with
// ids from base up: a criterion with positive (or zero) points is a
// PROCESS item (a merit, satisfied when the response shows it), one with
// negative points a PITFALL (a flaw, satisfied when the response has it),
// the weight the points' magnitude. The text the judge sees is JudgeSafe's.
// A proposal that did not parse adds nothing.
func ProposedItems(props []Proposal, base int32) ProposedRubric {
	var pr ProposedRubric
	first := map[string]int{}
	for k := range props {
		if props[k].Err != nil {
			continue
		}
		for _, c := range props[k].Output.Rubrics {
			it := proposedItem(c)
			key := schema.CriterionKey(c)
			j, seen := first[key]
			if !seen {
				j = len(pr.Judged)
				first[key] = j
				jit := it
				jit.ID = base + int32(j)
				pr.Judged = append(pr.Judged, jit)
			}
			it.ID = base + int32(len(pr.Items))
			pr.Items = append(pr.Items, it)
			pr.Owner = append(pr.Owner, k)
			pr.JudgedOf = append(pr.JudgedOf, j)
		}
	}
	return pr
}

func proposedItem(c schema.ProposedCriterion) schema.Item {
	typ := schema.TypeProcess
	if c.Points < 0 {
		typ = schema.TypePitfall
	}
	return schema.Item{Type: typ, Text: JudgeSafe(c.Criterion), Weight: math.Abs(c.Points), Polarity: schema.PolarityOf(typ)}
}

// JudgeSafe is text that came from the policy (a proposed criterion) made
// safe to place inside the judge's prompt: a '<' that would open a tag
// (followed by a letter, '/', '!' or '?') becomes '‹', so the text cannot
// close the item it is in or open another part of the prompt; a '<' in
// mathematics ("x < 2") stays.
func JudgeSafe(text string) string {
	if !strings.Contains(text, "<") {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '<' && i+1 < len(text) {
			n := text[i+1]
			if n == '/' || n == '!' || n == '?' || n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' {
				b.WriteString("‹")
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Verdicts expands a rollout's verdicts on Judged to one per item of
// Items, each with its item's id; nil for nil (a failed judgment).
func (pr *ProposedRubric) Verdicts(judged []schema.Satisfaction) []schema.Satisfaction {
	if judged == nil {
		return nil
	}
	out := make([]schema.Satisfaction, len(pr.Items))
	for i, j := range pr.JudgedOf {
		if j < len(judged) {
			out[i] = judged[j]
		}
		out[i].ID = pr.Items[i].ID
	}
	return out
}

// RubricatorItem is one proposed criterion's validity over the group.
type RubricatorItem struct {
	ID        int32    `json:"id"` // its id in the group's validity (and, under rlcer with proposals, its results' items)
	Criterion string   `json:"criterion"`
	Points    float64  `json:"points"`
	SatRate   *float64 `json:"sat_rate"` // over the responses judged; null when none was
	Corr      *float64 `json:"corr"`     // corr(v_k, z) as PenaltyCorr reads it, over the responses judged; null when v_k or z is constant
	Std       *float64 `json:"std"`      // std(v_k) over the responses judged; null when none was
	Valid     bool     `json:"valid"`
}

// RubricatorResult is a rubricator's reward for one proposal (seed 002 eq.
// 10-12): Reward = KValid/K + format, format 1 when FormatOK.
type RubricatorResult struct {
	FormatOK bool             `json:"format_ok"`
	K        int              `json:"k"`
	KValid   int              `json:"k_valid"`
	Reward   float64          `json:"reward"`
	Items    []RubricatorItem `json:"items"`
	// Error says why the format reward was not paid: the output did not
	// parse (then K is 0 and the reward 0), or the format's problems.
	Error string `json:"error,omitempty"`
}

// ScoreRubricators pays each proposal. rs are the group's responses with
// their verdicts on pr.Items (pr.Verdicts; nil for a failed judgment),
// analyzed for correctness. A criterion is valid (RLCER's rule, under
// p.PenaltyCorr and p.Alpha) when it is valid over the judged responses
// whatever verdicts the failed ones would have had: a failed judgment never
// makes a criterion valid, so a rubricator whose text breaks the judge
// earns no more than one judged (the failure floor).
func ScoreRubricators(p Params, props []Proposal, pr ProposedRubric, rs []Rollout) []RubricatorResult {
	valid := make([]bool, len(pr.Items))
	items := make([]RubricatorItem, len(pr.Items))
	for j, it := range pr.Items {
		sat, correct, fr, fw := itemSatisfaction(rs, j)
		v := ItemValidity(sat, correct, p.validityPolarity(it), p.Alpha)
		items[j] = RubricatorItem{ID: it.ID, Points: float64(Polarity(it)) * it.Weight, SatRate: v.SatRate, Corr: v.Corr}
		if len(sat) > 0 {
			_, sd := meanStd(sat)
			items[j].Std = &sd
		}
		valid[j] = floorValid(p, it, sat, correct, fr, fw)
		items[j].Valid = valid[j]
	}
	out := make([]RubricatorResult, len(props))
	for k := range props {
		res := RubricatorResult{FormatOK: props[k].FormatOK(), Items: []RubricatorItem{}}
		if !res.FormatOK {
			res.Error = formatError(&props[k])
		}
		n := 0
		for j, owner := range pr.Owner {
			if owner != k {
				continue
			}
			it := items[j]
			c := props[k].Output.Rubrics[n]
			it.Criterion, it.Points = c.Criterion, c.Points
			n++
			res.Items = append(res.Items, it)
			res.K++
			if it.Valid {
				res.KValid++
			}
		}
		if res.K > 0 {
			res.Reward = float64(res.KValid) / float64(res.K)
		}
		if res.FormatOK {
			res.Reward++
		}
		out[k] = res
	}
	return out
}

// floorValid reports whether an item with these judged satisfactions and
// correctness is valid for every verdict the failed responses could have
// had (failedRight of them correct, failedWrong not). The correlation
// depends only on how many of each kind the item is satisfied by, so every
// count is tried.
func floorValid(p Params, it schema.Item, sat, correct []float64, failedRight, failedWrong int) bool {
	pol := p.validityPolarity(it)
	n := len(sat) + failedRight + failedWrong
	vs := make([]float64, 0, n)
	zs := make([]float64, 0, n)
	for a := 0; a <= failedRight; a++ {
		for b := 0; b <= failedWrong; b++ {
			vs, zs = append(vs[:0], sat...), append(zs[:0], correct...)
			for i := range failedRight {
				vs, zs = append(vs, b2f(i < a)), append(zs, 1)
			}
			for i := range failedWrong {
				vs, zs = append(vs, b2f(i < b)), append(zs, 0)
			}
			if v := ItemValidity(vs, zs, pol, p.Alpha); v.Valid == nil || !*v.Valid {
				return false
			}
		}
	}
	return true
}

func itemSatisfaction(rs []Rollout, j int) (sat, correct []float64, failedRight, failedWrong int) {
	for i := range rs {
		if !rs[i].JudgeOK() {
			if rs[i].Correct {
				failedRight++
			} else {
				failedWrong++
			}
			continue
		}
		v := 0.0
		if j < len(rs[i].Verdicts) && rs[i].Verdicts[j].Satisfied {
			v = 1
		}
		sat = append(sat, v)
		correct = append(correct, b2f(rs[i].Correct))
	}
	return sat, correct, failedRight, failedWrong
}

func formatError(props *Proposal) string {
	if props.Err != nil {
		return props.Err.Error()
	}
	return fmt.Sprintf("format: %s", strings.Join(props.FormatProblems, "; "))
}
